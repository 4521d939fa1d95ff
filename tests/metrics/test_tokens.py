"""Token metrics on hand-made calls whose values are worked out by hand."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hand_made import call

from memlab.experiment import run_experiment
from memlab.metrics import aux_token_metrics, budget_violations, token_metrics
from memlab.trace import LLM_CALL, Event


def test_prompt_statistics_and_saved_ratio() -> None:
    calls = [call(10, 10), call(20, 40), call(30, 90), call(40, 160)]
    m = token_metrics(calls)
    assert m["calls"] == 4
    assert m["tokens.prompt.mean"] == 25.0
    # numpy's linear interpolation: position 0.95 * 3 = 2.85 between 30 and 40
    assert m["tokens.prompt.p95"] == 38.5
    assert m["tokens.prompt.max"] == 40
    assert m["tokens.prompt.total"] == 100
    assert m["tokens.saved_ratio"] == 1 - 100 / 300


UNDEFINED_WITHOUT_CALLS = (
    "tokens.prompt.mean",
    "tokens.prompt.p95",
    "tokens.prompt.max",
    "tokens.saved_ratio",
    "tokens.net_saved_ratio",
)


def test_no_calls_gives_zero_counts_and_undefined_means() -> None:
    m = token_metrics([])
    assert m["calls"] == 0 and m["tokens.prompt.total"] == 0 and m["tokens.full_history.total"] == 0
    assert m["tokens.prompt.mean"] is None and m["tokens.prompt.p95"] is None and m["tokens.saved_ratio"] is None


def test_a_run_without_calls_writes_its_undefined_token_metrics_as_null(make_config: Any, tmp_path: Path) -> None:
    """A dialogue of user messages only: no assistant turn, so no call; a mean over no prompt is no 0."""
    messages = [{"role": "user", "id": "n1", "content": "I live in Oslo."}, {"role": "user", "content": "Hi."}]
    probes = [{"question": "Where do I live?", "answer": "Oslo", "evidence": ["n1"]}]
    data = tmp_path / "nocalls.jsonl"
    data.write_text(json.dumps({"id": "nocalls", "messages": messages, "probes": probes}) + "\n")
    result = run_experiment(make_config("dataset=jsonl", f"dataset.path={data}", "context=trim"), tmp_path / "run")
    written = json.loads((result.run_dir / "metrics.json").read_text())
    assert written["calls"] == 0 and written["tokens.prompt.total"] == 0
    assert {name: written[name] for name in UNDEFINED_WITHOUT_CALLS} == dict.fromkeys(UNDEFINED_WITHOUT_CALLS)


def test_budget_violations_count_calls_over_the_window() -> None:
    calls = [call(100, 100), call(128, 200), call(129, 300)]
    assert budget_violations(calls, 128) == 1
    assert budget_violations(calls, 99) == 3


def test_aux_tokens_sum_every_model_call_cached_or_failed() -> None:
    events = [
        Event(LLM_CALL, {"prompt_tokens": 100, "completion_tokens": 20, "cached": False}),
        Event(LLM_CALL, {"prompt_tokens": 50, "completion_tokens": 5, "cached": True}),
        Event(LLM_CALL, {"prompt_tokens": 0, "completion_tokens": 0, "failed": True}),
        Event("summary", {"source_tokens": 999, "summary_tokens": 1}),
    ]
    assert aux_token_metrics(events) == {"tokens.aux.prompt": 150, "tokens.aux.completion": 25, "tokens.aux.total": 175}
