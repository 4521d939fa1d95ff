"""`hydra/launcher=ray` (the optional `ray` extra) against a local Ray instance started by the launcher.

Skipped with a reason when hydra-ray-launcher or ray is not installed (`pip install 'memlab[ray]'`).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from simulated_runs import job_dir

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "datasets" / "sample.jsonl"

pytest.importorskip("ray", reason="ray is not installed (pip install 'memlab[ray]')")
pytest.importorskip(
    "hydra_plugins.hydra_ray_launcher", reason="hydra-ray-launcher is not installed (pip install 'memlab[ray]')"
)


def test_ray_sweep_runs_jobs_on_a_local_instance_and_marks_failures(tmp_path: Path) -> None:
    sweep = tmp_path / "ray"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "CI": "1", "RAY_AUTH_MODE": "disabled"}
    args = [
        "run", "-m", "hydra/launcher=ray", "+hydra.launcher.ray.init.num_cpus=2",
        "+hydra.launcher.ray.init.include_dashboard=false", "dataset=jsonl",
        f"dataset.path={SAMPLE},{tmp_path / 'missing.jsonl'}", f"hydra.sweep.dir={sweep}",
    ]  # fmt: skip
    out = subprocess.run(
        [sys.executable, "-m", "memlab", *args], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600
    )
    assert out.returncode == 0, out.stderr[-3000:]
    assert "Ray Launcher is launching 2 jobs" in out.stdout + out.stderr
    assert "Started a local Ray instance" in out.stderr
    assert json.loads((job_dir(sweep, 0) / "metrics.json").read_text())["calls"] == 4
    assert json.loads((job_dir(sweep, 1) / "error.json").read_text())["type"] == "DatasetError"
    assert pd.read_csv(sweep / "comparison.csv")["status"].tolist() == ["ok", "failed"]
