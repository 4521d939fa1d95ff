"""The project's own regression gate: the pinned CI experiment matches the committed baseline.

When a change is meant to move these numbers, rerun and accept it (the message below says how);
the diff of experiments/baselines/ci.json then shows every metric it moved, in review.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BASELINE = ROOT / "experiments" / "baselines" / "ci.json"


def test_ci_experiment_matches_the_committed_baseline(locomo_path: Path, tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "CI": "1", "MEMLAB_SHARED": str(locomo_path.parents[2])}
    sweep = tmp_path / "ci"
    run = subprocess.run(
        [sys.executable, "-m", "memlab", "run", "experiment=ci", f"hydra.sweep.dir={sweep}"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0, run.stderr
    assert "failed" not in run.stderr.split("compared", 1)[-1], run.stderr
    gate = subprocess.run(
        [sys.executable, "-m", "memlab", "compare", str(BASELINE), str(sweep)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
    )
    accept = (
        f"if the change is intended: memlab run experiment=ci hydra.sweep.dir=/tmp/ci && "
        f"memlab compare {BASELINE.relative_to(ROOT)} /tmp/ci --update"
    )
    assert gate.returncode == 0, f"{gate.stdout}\n{gate.stderr}\n{accept}"
