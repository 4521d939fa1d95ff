"""Sweeps through the real CLI: a broken configuration is marked failed and the sweep still compares."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import yaml
from simulated_runs import job_dir

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "datasets" / "sample.jsonl"


def memlab(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "CI": "1"}
    return subprocess.run([sys.executable, "-m", "memlab", *args], cwd=cwd, env=env, capture_output=True, text=True)


def test_a_broken_configuration_does_not_stop_the_sweep(tmp_path: Path) -> None:
    """Basic sweeper, jobs in two joblib worker processes; the missing file breaks jobs 1 and 3."""
    sweep = tmp_path / "sweep"
    out = memlab(
        "run",
        "-m",
        "hydra/launcher=joblib",
        "hydra.launcher.n_jobs=2",
        "dataset=jsonl",
        "sim.probe_context=true,false",
        f"dataset.path={SAMPLE},{tmp_path / 'missing.jsonl'}",
        f"hydra.sweep.dir={sweep}",
        cwd=tmp_path,
    )
    assert out.returncode == 1, out.stderr  # a sweep with a failed job is not a success
    assert "compared 4 configurations, 2 failed" in out.stderr
    assert f"memlab: error: job(s) 1, 3 failed in {sweep}; sweep.allow_failures=true to accept" in out.stderr
    error = json.loads((job_dir(sweep, 1) / "error.json").read_text())
    assert error["type"] == "MissingFileError" and "missing.jsonl" in error["message"]
    assert (job_dir(sweep, 2) / "metrics.json").is_file()
    assert (job_dir(sweep, 0) / "metrics.json").read_bytes() == (job_dir(sweep, 2) / "metrics.json").read_bytes()
    table = pd.read_csv(sweep / "comparison.csv")
    assert list(table["status"]) == ["ok", "failed", "ok", "failed"]
    assert table["error"].fillna("").str.contains("missing.jsonl").tolist() == [False, True, False, True]
    assert "failed" in (sweep / "comparison.html").read_text()
    # the same comparison rebuilds from the directories alone
    again = memlab("report", str(sweep), "-o", str(tmp_path / "again"), cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    assert pd.read_csv(tmp_path / "again" / "comparison.csv")["label"].tolist() == table["label"].tolist()
    # a job killed before it finished leaves no run directory: the report says which is missing
    for name in ("metrics.json", "calls.csv"):
        (sweep / "2" / name).unlink()
    killed = memlab("report", str(sweep), "-o", str(tmp_path / "killed"), cwd=tmp_path)
    assert killed.returncode == 0, killed.stderr
    assert f"memlab: {sweep}: job(s) 2 never finished" in killed.stderr


def test_allow_failures_accepts_a_failed_job(tmp_path: Path) -> None:
    sweep = tmp_path / "sweep"
    out = memlab(
        "run", "-m", "dataset.dialogues=1", "dataset.sessions=2", "dataset.facts=2",
        "dataset.turns_per_session=1,4", "sweep.allow_failures=true", f"hydra.sweep.dir={sweep}", cwd=tmp_path,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert "job(s) 0 failed" in out.stderr and "allowed by sweep.allow_failures" in out.stderr


def test_optuna_searches_for_the_objective(tmp_path: Path) -> None:
    pytest.importorskip(
        "hydra_plugins.hydra_optuna_sweeper", reason="hydra-optuna-sweeper is not installed (memlab[optuna])"
    )
    sweep = tmp_path / "optuna"
    out = memlab(
        "run",
        "-m",
        "hydra/sweeper=optuna",
        "hydra.sweeper.n_trials=3",
        "hydra.sweeper.direction=minimize",
        "hydra.sweeper.sampler.seed=0",
        "objective.metric=tokens.prompt.mean",
        "dataset=jsonl",
        "sim.call_roles=choice([assistant],[user])",
        f"dataset.path={SAMPLE}",
        f"hydra.sweep.dir={sweep}",
        cwd=tmp_path,
    )
    assert out.returncode == 0, out.stderr
    result = yaml.safe_load((sweep / "optimization_results.yaml").read_text())
    values = [json.loads((p / "metrics.json").read_text())["tokens.prompt.mean"] for p in sorted(sweep.glob("[0-9]*"))]
    assert result["best_value"] == min(values)
    assert (sweep / "comparison.csv").is_file()
