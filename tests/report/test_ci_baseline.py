"""The project's own regression gate: the pinned CI experiments match their committed baselines.

Three experiments (conf/experiment/ci*.yaml), each with its baseline in experiments/baselines/:
`ci` (context strategies on synthetic and LoCoMo data), `ci_summaries` (every summarizing strategy)
and `ci_longterm` (long-term recall and answer scoring on a LoCoMo conversation). When a change is
meant to move these numbers, rerun and accept it (the message below says how); the diff of the
baseline then shows every metric it moved, in review. A planted retrieval change must fail the gate.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BASELINES = ROOT / "experiments" / "baselines"
EXPERIMENTS = ("ci", "ci_summaries", "ci_longterm")


def memlab(cwd: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "memlab", *args], cwd=cwd, env=env, capture_output=True, text=True)


@pytest.fixture
def env(locomo_path: Path) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT), "CI": "1", "MEMLAB_SHARED": str(locomo_path.parents[2])}


def run_experiment(tmp_path: Path, env: dict[str, str], name: str, *overrides: str) -> Path:
    sweep = tmp_path / name
    run = memlab(tmp_path, env, "run", f"experiment={name}", f"hydra.sweep.dir={sweep}", *overrides)
    assert run.returncode == 0, run.stderr
    assert "failed" not in run.stderr.split("compared", 1)[-1], run.stderr
    return sweep


@pytest.mark.parametrize("name", EXPERIMENTS)
def test_ci_experiment_matches_the_committed_baseline(tmp_path: Path, env: dict[str, str], name: str) -> None:
    sweep = run_experiment(tmp_path, env, name)
    baseline = BASELINES / f"{name}.json"
    gate = memlab(tmp_path, env, "compare", str(baseline), str(sweep))
    accept = (
        f"if the change is intended: memlab run experiment={name} hydra.sweep.dir=/tmp/{name} && "
        f"memlab compare {baseline.relative_to(ROOT)} /tmp/{name} --update"
    )
    assert gate.returncode == 0, f"{gate.stdout}\n{gate.stderr}\n{accept}"


def test_the_gate_fails_a_planted_retrieval_change(tmp_path: Path, env: dict[str, str]) -> None:
    """The long-term index's dense weight 0.05 -> 1.0: recall drops, and the gate must say so."""
    sweep = run_experiment(tmp_path, env, "ci_longterm", "longterm.index.dense_weight=1.0")
    gate = memlab(tmp_path, env, "compare", str(BASELINES / "ci_longterm.json"), str(sweep))
    assert gate.returncode == 1, gate.stdout
    regressions = [line for line in gate.stdout.splitlines() if "REGRESSION" in line]
    assert any("longterm.recall@10 " in line for line in regressions), gate.stdout
    assert gate.stdout.strip().splitlines()[-1].startswith("FAIL")
