"""Summary, event-count and latency metrics on hand-made events of the shapes the producers emit."""

from __future__ import annotations

from typing import Any

import pytest
import tiktoken

from memlab.metrics import event_metrics, latency_metrics, latency_samples, reference_latency_us, summary_metrics
from memlab.sim.reference import REFERENCE_TEXTS, reference_us
from memlab.trace import (
    CONTEXT_APPLY,
    FALLBACK,
    LATENCY_REFERENCE,
    LLM_CALL,
    LONGTERM_EXTRACT,
    LONGTERM_RETRIEVE,
    LONGTERM_SKIP,
    MEMORY_CLEANUP,
    MEMORY_COMPRESS,
    Event,
    SummaryEvent,
    recording,
)


def made(layer: str, source: int, summary: int | None, reason: str | None = None) -> Event:
    """A SUMMARY event in the one shape `write_summary` emits (`SummaryEvent`)."""
    event = SummaryEvent(
        layer=layer,
        strategy="s",
        source_ids=("a",),
        source_messages=1,
        source_tokens=source,
        summary_tokens=summary,
        counter="cl100k_base",
        accepted=reason is None,
        reason=reason,
        fallback=None if reason is None else "f",
    )
    with recording() as events:
        event.emit()
    return events[0]


def test_summary_ratios_and_violations_per_layer() -> None:
    events = [
        made("context", 200, 50),
        made("context", 100, 120, "summary_longer"),  # longer
        made("memory", 40, 60, "summary_longer"),  # longer
        made("memory", 40, 10),
        made("compressor", 30, None, "llm_error"),  # the model failed: no summary, no ratio
        made("compressor", 30, 4, "empty_summary"),
        Event(LLM_CALL, {"prompt_tokens": 5}),
    ]
    m = summary_metrics(events)
    assert (m["summary.count"], m["summary.accepted"], m["summary.fallbacks"]) == (6, 2, 4)
    assert (m["summary.violations"], m["summary.empty"], m["summary.failed"]) == (2, 1, 1)
    assert m["summary.ratio.mean"] == pytest.approx((0.25 + 1.2 + 1.5 + 0.25 + 4 / 30) / 5)
    assert m["summary.ratio.max"] == 1.5
    assert (m["summary.context.count"], m["summary.context.violations"]) == (2, 1)
    assert m["summary.context.ratio.mean"] == pytest.approx((0.25 + 1.2) / 2)
    assert (m["summary.memory.violations"], m["summary.memory.ratio.max"]) == (1, 1.5)
    assert (m["summary.compressor.failed"], m["summary.compressor.empty"], m["summary.compressor.accepted"]) == (
        1,
        1,
        0,
    )
    assert m["summary.compressor.ratio.mean"] == pytest.approx(4 / 30)


def test_a_summary_exactly_as_long_as_its_source_is_accepted_and_no_violation() -> None:
    """The defect: `write_summary` accepts it ("不应比原文更长"), and the metric counted it a violation too."""
    m = summary_metrics(
        [made("context", 44, 44), Event("summary", {"layer": "memory", "source_tokens": 44, "summary_tokens": 44})]
    )
    assert (m["summary.count"], m["summary.accepted"], m["summary.violations"], m["summary.fallbacks"]) == (2, 2, 0, 0)


def test_no_summaries() -> None:
    m = summary_metrics([])
    assert m["summary.count"] == m["summary.memory.count"] == m["summary.violations"] == 0
    assert m["summary.ratio.mean"] is None and m["summary.compressor.ratio.max"] is None


def test_event_counts() -> None:
    events = [
        Event(LLM_CALL, {"failed": False}),
        Event(LLM_CALL, {"failed": True, "error": "LLMTimeout"}),
        Event(LLM_CALL, {"failed": True, "error": "LLMError"}),
        Event(FALLBACK, {"strategy": "summarize", "reason": "llm failed"}),
        Event(MEMORY_COMPRESS, {"before_items": 30, "after_items": 12, "summary_length": 400, "summary_tokens": 90}),
        Event(MEMORY_CLEANUP, {"before_items": 50, "after_items": 20, "summary_length": 0, "archived": 0}),
        Event(LONGTERM_EXTRACT, {"memories": 3, "duplicates": 1, "latency_us": 10}),
        Event(LONGTERM_EXTRACT, {"memories": 2, "duplicates": 0, "latency_us": 10}),
        Event(LONGTERM_SKIP, {"layer": "greeting"}),
        Event(LONGTERM_SKIP, {"layer": "too_short"}),
        Event("longterm.cleanup", {"archived": 4}),
    ]
    m = event_metrics(events)
    assert (m["llm.calls"], m["llm.failures"], m["llm.fallbacks"]) == (3, 2, 1)
    assert (m["memory.compress.count"], m["memory.compress.items.before"], m["memory.compress.items.after"]) == (
        1,
        30,
        12,
    )
    assert (m["memory.cleanup.count"], m["memory.cleanup.items.before"], m["memory.cleanup.items.after"]) == (1, 50, 20)
    assert (m["memory.archived"], m["memory.compress.summary_tokens.mean"]) == (4, 90.0)
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


def test_every_reference_sample_tokenizes_its_texts(monkeypatch: pytest.MonkeyPatch) -> None:
    """A process samples the workload many times: each sample tokenizes all 50 texts again (memlab's counters
    keep short texts' counts, and samples answered from them timed lookups: `compare --latency` read a summarizing
    run's steps as 57x slower than they were)."""
    encoded: list[str] = []
    encode = tiktoken.Encoding.encode

    def counted(self: tiktoken.Encoding, text: str, *args: Any, **kwargs: Any) -> list[int]:
        encoded.append(text)
        return encode(self, text, *args, **kwargs)

    monkeypatch.setattr(tiktoken.Encoding, "encode", counted)
    reference_us()  # a process's first sample
    encoded.clear()
    reference_us()
    reference_us()
    assert len(encoded) == 2 * (REFERENCE_TEXTS + 1)  # each with its untimed first call


def test_reference_latency_is_the_median_of_the_samples_a_replay_took() -> None:
    samples = [Event(LATENCY_REFERENCE, {"latency_us": us}) for us in (900.0, 5000.0, 1000.0)]
    assert reference_latency_us([*samples, Event(CONTEXT_APPLY, {"latency_us": 1})]) == 1000.0
