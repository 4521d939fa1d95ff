"""Summary, event-count and latency metrics on hand-made events."""

from __future__ import annotations

import pytest

from memlab.metrics import event_metrics, latency_metrics, latency_samples, reference_latency_us, summary_metrics
from memlab.trace import (
    CONTEXT_APPLY,
    FALLBACK,
    LLM_CALL,
    LONGTERM_EXTRACT,
    LONGTERM_RETRIEVE,
    LONGTERM_SKIP,
    MEMORY_CLEANUP,
    MEMORY_COMPRESS,
    SUMMARY,
    Event,
)


def test_summary_ratios_and_violations() -> None:
    events = [
        Event(SUMMARY, {"source_tokens": 200, "summary_tokens": 50, "accepted": True}),
        Event(SUMMARY, {"source_tokens": 100, "summary_tokens": 100, "accepted": False}),  # not shorter
        Event(SUMMARY, {"source_tokens": 40, "summary_tokens": 60, "accepted": False}),  # longer
        Event(LLM_CALL, {"prompt_tokens": 5}),
    ]
    m = summary_metrics(events)
    assert m["summary.count"] == 3
    assert m["summary.ratio.mean"] == pytest.approx((0.25 + 1.0 + 1.5) / 3)
    assert m["summary.ratio.max"] == 1.5
    assert m["summary.violations"] == 2


def test_no_summaries() -> None:
    assert summary_metrics([]) == {
        "summary.count": 0,
        "summary.ratio.mean": None,
        "summary.ratio.max": None,
        "summary.violations": 0,
    }


def test_event_counts() -> None:
    events = [
        Event(LLM_CALL, {"failed": False}),
        Event(LLM_CALL, {"failed": True, "error": "LLMTimeout"}),
        Event(LLM_CALL, {"failed": True, "error": "LLMError"}),
        Event(FALLBACK, {"strategy": "summarize", "reason": "llm failed"}),
        Event(MEMORY_COMPRESS, {"before_items": 30, "after_items": 12, "summary_length": 400}),
        Event(MEMORY_CLEANUP, {"before_items": 50, "after_items": 20, "summary_length": 0, "archived": 0}),
        Event(LONGTERM_EXTRACT, {"memories": 3, "duplicates": 1, "latency_us": 10}),
        Event(LONGTERM_EXTRACT, {"memories": 2, "duplicates": 0, "latency_us": 10}),
        Event(LONGTERM_SKIP, {"layer": "greeting"}),
        Event(LONGTERM_SKIP, {"layer": "too_short"}),
        Event("longterm.cleanup", {"archived": 4}),
    ]
    m = event_metrics(events)
    assert (m["llm.calls"], m["llm.failures"], m["llm.fallbacks"]) == (3, 2, 1)
    assert (m["memory.items.before"], m["memory.items.after"], m["memory.archived"]) == (80, 32, 4)
    assert (m["longterm.memories"], m["longterm.duplicates"], m["longterm.skipped"]) == (5, 1, 2)


def test_latency_percentiles_per_stage() -> None:
    events = [Event(CONTEXT_APPLY, {"latency_us": us}) for us in (10, 20, 30, 40, 1000)]
    events += [Event(LONGTERM_RETRIEVE, {"latency_us": 7})]
    m = latency_metrics(latency_samples(events))
    assert m["latency.context.p50_us"] == 30.0
    assert m["latency.context.p95_us"] == pytest.approx(40 + 0.8 * 960)  # position 3.8 of 0..4
    assert m["latency.retrieval.p50_us"] == m["latency.retrieval.p95_us"] == 7.0
    assert m["latency.extract.p50_us"] is None


def test_reference_latency_is_a_positive_time() -> None:
    assert reference_latency_us() > 0
