"""`latency.model`: the strategies' model calls a cache did not answer, from a run against a local HTTP server."""

from __future__ import annotations

import json
import statistics
from pathlib import Path
from typing import Any

import pandas as pd

from memlab.experiment import run_experiment

DELAY_S = 0.05  # the server waits this long before each answer


def test_model_latency_times_the_calls_no_cache_answered(
    make_config: Any, openai_server_module: Any, tmp_path: Path, monkeypatch: Any
) -> None:
    """The defect: each model call's time was recorded (LLM_CALL `latency_us`) but no metric reported it, so a run
    against a slow provider read as fast as the offline model. A second run, every call from the disk cache, has
    no model sample."""
    monkeypatch.setenv("MEMLAB_TEST_KEY", "sk-test")
    with openai_server_module.serve() as server:
        server.delay_s = DELAY_S
        llm = (
            "llm=litellm", "llm.model=openai/test-model", f"llm.api_base={server.base_url}",
            "llm.api_key_env=MEMLAB_TEST_KEY", "llm.num_retries=0", f"llm.cache_dir={tmp_path / 'cache'}",
        )  # fmt: skip
        config = ("dataset.dialogues=1", "dataset.sessions=2", "context=summarize", *llm)
        first = run_experiment(make_config(*config), tmp_path / "first").run_dir
        again = run_experiment(make_config(*config), tmp_path / "again").run_dir
    metrics = json.loads((first / "metrics.json").read_text())
    latency = json.loads((first / "latency.json").read_text())
    samples = pd.read_csv(first / "latency.csv")
    timed = samples.loc[samples["stage"] == "model", "latency_us"].tolist()
    assert len(timed) == metrics["llm.calls"] - latency["latency.cached_calls"] > 0
    assert min(timed) >= DELAY_S * 1e6  # each waited for the server
    median = statistics.quantiles(timed, n=20, method="inclusive")  # 19 cut points: the 10th is p50, the 19th p95
    assert latency["latency.model.p50_us"] == statistics.median(timed) == median[9]
    assert abs(latency["latency.model.p95_us"] - median[18]) < 1e-6 * median[18]
    repeated = json.loads((again / "latency.json").read_text())
    assert repeated["latency.cached_calls"] == metrics["llm.calls"]
    assert repeated["latency.model.p50_us"] is None and repeated["latency.model.p95_us"] is None
