"""Token metrics on hand-made calls whose values are worked out by hand."""

from __future__ import annotations

from hand_made import call

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


def test_no_calls_gives_zeros() -> None:
    m = token_metrics([])
    assert m["calls"] == 0 and m["tokens.prompt.total"] == 0 and m["tokens.saved_ratio"] == 0.0


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
