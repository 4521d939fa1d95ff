"""The project's own regression gate: the pinned CI experiments match their committed baselines.

Three experiments (conf/experiment/ci*.yaml), each with its baseline in experiments/baselines/:
`ci` (context strategies on synthetic and LoCoMo data), `ci_summaries` (every summarizing strategy)
and `ci_longterm` (long-term recall and answer scoring on a LoCoMo conversation). When a change is
meant to move these numbers, rerun and accept it (the message below says how); the diff of the
baseline then shows every metric it moved, in review. A planted retrieval change must fail the gate.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from replays import NO_FIGURES

ROOT = Path(__file__).resolve().parents[2]
BASELINES = ROOT / "experiments" / "baselines"
EXPERIMENTS = ("ci", "ci_summaries", "ci_longterm")


@pytest.fixture
def memlab(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, locomo_path: Path, memlab_cli: Callable[..., int]
) -> Callable[..., int]:
    """`memlab ARGS` in this process, from `tmp_path`, as CI runs it: the process adds nothing to these checks.

    The command line's own exit codes and messages are tests/test_cli_errors.py's.
    """
    monkeypatch.setenv("CI", "1")
    monkeypatch.setenv("MEMLAB_SHARED", str(locomo_path.parents[2]))
    monkeypatch.chdir(tmp_path)
    return memlab_cli


def run_experiment(
    tmp_path: Path, memlab: Callable[..., int], capfd: pytest.CaptureFixture[str], name: str, *overrides: str
) -> Path:
    """The experiment's sweep, its reports without figures: the gate compares metrics.json (tests/report draws them)."""
    sweep = tmp_path / name
    status = memlab("run", f"experiment={name}", f"hydra.sweep.dir={sweep}", NO_FIGURES, *overrides)
    stderr = capfd.readouterr().err
    assert status == 0, stderr
    assert "failed" not in stderr.split("compared", 1)[-1], stderr
    return sweep


@pytest.mark.parametrize("name", EXPERIMENTS)
def test_ci_experiment_matches_the_committed_baseline(
    tmp_path: Path, memlab: Callable[..., int], capfd: pytest.CaptureFixture[str], name: str
) -> None:
    sweep = run_experiment(tmp_path, memlab, capfd, name)
    baseline = BASELINES / f"{name}.json"
    status = memlab("compare", str(baseline), str(sweep))
    gate = capfd.readouterr()
    accept = (
        f"if the change is intended: memlab run experiment={name} hydra.sweep.dir=/tmp/{name} && "
        f"memlab compare {baseline.relative_to(ROOT)} /tmp/{name} --update"
    )
    assert status == 0, f"{gate.out}\n{gate.err}\n{accept}"


def test_the_gate_fails_a_planted_retrieval_change(
    tmp_path: Path, memlab: Callable[..., int], capfd: pytest.CaptureFixture[str]
) -> None:
    """The long-term index's dense weight 0.05 -> 1.0: recall drops, and the gate must say so."""
    sweep = run_experiment(tmp_path, memlab, capfd, "ci_longterm", "longterm.index.dense_weight=1.0")
    status = memlab("compare", str(BASELINES / "ci_longterm.json"), str(sweep))
    gate = capfd.readouterr().out
    assert status == 1, gate
    regressions = [line for line in gate.splitlines() if "REGRESSION" in line]
    assert any("longterm.recall@10 " in line for line in regressions), gate
    assert gate.strip().splitlines()[-1].startswith("FAIL")
