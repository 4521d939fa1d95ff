"""Evidence retention, evidence folded into summaries and answer coverage on hand-made probes."""

from __future__ import annotations

import pytest
from hand_made import call, lifecycle, probe

from memlab.metrics import metric_words as content_words
from memlab.metrics import probe_rows, retention_metrics
from memlab.metrics.retention import probe_retention
from memlab.trace import Event, SummaryEvent, recording


def summary(*ids: str, accepted: bool = True, text: str = "[Conversation summary] Ann: flew to Lisbon.") -> Event:
    """A SUMMARY event in the one shape `write_summary` emits."""
    event = SummaryEvent(
        layer="context",
        strategy="summarize",
        source_ids=ids,
        source_messages=len(ids),
        source_tokens=100,
        summary_tokens=20,
        counter="estimate",
        accepted=accepted,
        reason=None if accepted else "summary_longer",
        fallback=None if accepted else "keep_first",
        text=text,
    )
    with recording() as events:
        event.emit()
    return events[0]


def test_shares_of_one_probe() -> None:
    p = probe(
        ("D1:1", "D1:2", "D1:3", "D1:4"),
        ("D1:1", "D1:2", "D1:9"),
        summary("D1:3", "D1:1"),  # D1:1 is also kept verbatim: counts as retained, not summarized
        answer="Lisbon in May 2023",
        context="You help.\n[Conversation summary] Ann:   flew to Lisbon.\nAnn: it was 2023.",
    )
    shares = probe_retention(p)
    assert shares["context.evidence_retention"] == 0.5
    assert shares["context.evidence_fed_to_summary"] == 0.25
    assert shares["context.evidence_in_summary"] == pytest.approx(1 / 3)  # lisbon (in the summary sent)
    assert shares["context.answer_coverage"] == pytest.approx(2 / 3)  # lisbon, 2023 of lisbon, may, 2023


def test_a_summary_not_in_the_request_keeps_nothing() -> None:
    dropped = probe(("a",), (), summary("a"), answer="Lisbon", context="Ann: something else about Lisbon")
    shares = probe_retention(dropped)
    assert shares["context.evidence_fed_to_summary"] == 1.0  # it was fed to a summary ...
    assert shares["context.evidence_in_summary"] == 0.0  # ... that a later step dropped
    assert shares["context.answer_coverage"] == 1.0


def test_rejected_summaries_fold_nothing() -> None:
    text = "[Conversation summary] Lisbon"
    p = probe(("a", "b"), (), summary("a", "b", accepted=False, text=text), answer="Lisbon", context=text)
    shares = probe_retention(p)
    assert shares["context.evidence_fed_to_summary"] == shares["context.evidence_in_summary"] == 0.0


def test_memory_layer_summaries_earlier_in_the_dialogue_count() -> None:
    rows = probe_rows(
        [
            lifecycle(summary("a", text="Ann likes Oslo"), dialogue="d1"),
            lifecycle(summary("b", text="Ann likes Lisbon"), dialogue="d2"),  # another dialogue's: never counts
            probe(("a", "b"), (), dialogue="d1", answer="Oslo Lisbon", context="Ann likes Oslo Ann likes Lisbon"),
        ]
    )
    assert rows[0]["context.evidence_fed_to_summary"] == 0.5
    assert rows[0]["context.evidence_in_summary"] == 0.5


def test_a_context_summary_of_an_earlier_call_counts_where_the_request_carries_it() -> None:
    """A stateful strategy (llamaindex_summary) reports its summary once, at the call that wrote it."""
    rows = probe_rows(
        [
            call(10, 20, summary("a", text="Ann likes Oslo"), dialogue="d1"),
            call(10, 20, summary("b", text="Ann likes Lisbon"), dialogue="d1"),  # replaced by a later summary
            call(10, 20, summary("c", text="Ann likes Rome"), dialogue="d2"),  # another dialogue's: never counts
            probe(("a", "b", "c"), (), dialogue="d1", answer="Oslo Lisbon Rome", context="Ann likes  Oslo\nx"),
        ]
    )
    assert rows[0]["context.evidence_fed_to_summary"] == pytest.approx(1 / 3)  # a: its summary is sent
    assert rows[0]["context.evidence_in_summary"] == pytest.approx(1 / 3)  # oslo


def test_undefined_shares_are_none_and_skipped_in_means() -> None:
    rows = probe_rows(
        [
            probe((), ("a",), answer=None, category="5", pid="q1"),
            probe(("a", "b"), ("a",), answer="blue", context="the blue car", category="1", pid="q2"),
            probe(("c",), ("c",), answer="red", context="green", category="2", pid="q3"),
            probe(("d", "e"), (), answer="x y", context="y", category="2", pid="q4"),
        ]
    )
    assert rows[0]["context.evidence_retention"] is None and rows[0]["context.answer_coverage"] is None
    m = retention_metrics(rows)
    assert m["context.evidence_retention"] == pytest.approx((0.5 + 1.0 + 0.0) / 3)
    assert m["context.evidence_retention.cat_1"] == 0.5
    assert m["context.evidence_retention.cat_2"] == 0.5
    assert m["context.evidence_retention.cat_5"] is None
    assert m["context.answer_coverage"] == pytest.approx((1.0 + 0.0 + 0.5) / 3)
    assert m["context.answer_coverage.cat_2"] == 0.25


def test_content_words_drop_function_words_and_split_chinese() -> None:
    assert content_words("She moved to the city of Oslo in 2019.") == ["moved", "city", "oslo", "2019"]
    assert content_words("我住在北京") == ["我", "住", "在", "北", "京"]


def test_adversarial_questions_are_reported_apart_from_the_overall_mean() -> None:
    rows = probe_rows(
        [
            probe(("a",), ("a",), answer="blue", context="blue", category="single-hop", pid="q1"),
            probe(("b",), (), answer=None, context="", category="adversarial", pid="q2"),
        ]
    )
    m = retention_metrics(rows)
    assert m["context.evidence_retention"] == 1.0  # the adversarial probe's 0.0 is not in it
    assert m["context.evidence_retention.cat_adversarial"] == 0.0
    assert retention_metrics(rows, excluded=())["context.evidence_retention"] == 0.5
