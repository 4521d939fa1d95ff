"""The spine end to end: compose, replay, publish a run directory."""

from __future__ import annotations

import json
from pathlib import Path

from memlab.experiment import run_experiment


def test_run_writes_results_and_is_deterministic(make_config, tmp_path: Path) -> None:
    cfg = make_config("dataset=jsonl", f"dataset.path={Path(__file__).parents[1] / 'datasets/sample.jsonl'}")
    a = run_experiment(cfg, tmp_path / "a")
    b = run_experiment(cfg, tmp_path / "b")
    names = {p.name for p in a.run_dir.iterdir()}
    assert {"metrics.json", "calls.csv", "config.yaml", "manifest.json"} <= names
    assert (a.run_dir / "metrics.json").read_bytes() == (b.run_dir / "metrics.json").read_bytes()
    metrics = json.loads((a.run_dir / "metrics.json").read_text())
    assert metrics["calls"] == 4  # one per assistant turn of the two sample conversations
    assert metrics["tokens.prompt.max"] >= metrics["tokens.prompt.mean"] > 0
