"""Long-term retrieval metrics on hand-made cases (BEIR definitions, evidence turns as the units)."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from memlab.dialogues import Probe
from memlab.metrics.longterm import longterm_metrics, ndcg_at_k, recall_at_k


def test_recall_counts_evidence_cited_by_the_top_k() -> None:
    retrieved = [["D1:1"], ["D5:5"], ["D2:2", "D1:1"], ["D3:3"]]
    assert recall_at_k(["D1:1", "D2:2"], retrieved, 1) == 0.5
    assert recall_at_k(["D1:1", "D2:2"], retrieved, 2) == 0.5
    assert recall_at_k(["D1:1", "D2:2"], retrieved, 3) == 1.0
    assert recall_at_k(["D9:9"], retrieved, 10) == 0.0
    with pytest.raises(ValueError):
        recall_at_k([], retrieved, 1)


def test_ndcg_rewards_early_and_new_evidence() -> None:
    assert ndcg_at_k(["a"], [["a"], ["x"]], 10) == pytest.approx(1.0)
    assert ndcg_at_k(["a"], [["x"], ["a"]], 10) == pytest.approx(1 / 1.5849625)  # log2(3)
    assert ndcg_at_k(["a", "b"], [["a"], ["a"], ["b"]], 10) == pytest.approx((1 + 1 / 2) / (1 + 1 / 1.5849625))
    assert ndcg_at_k(["a", "b"], [["x"], ["y"]], 10) == 0.0  # nothing found
    assert ndcg_at_k(["a", "b"], [["a"], ["y"]], 10) == pytest.approx(1 / (1 + 1 / 1.5849625))  # b is missing


@dataclass
class _Record:
    probe: Probe
    results: dict = field(default_factory=dict)


def test_metrics_average_over_questions_with_evidence_and_by_category() -> None:
    def rec(evidence, category, retrieved, tokens=100):
        probe = Probe(id="q", question="?", answer=None, evidence=tuple(evidence), category=category)
        return _Record(probe, {"longterm.retrieved_evidence": retrieved, "longterm.injected_tokens": tokens})

    records = [
        rec(["a"], "1", [["a"]], 100),
        rec(["b", "c"], "2", [["x"], ["b"]], 300),
        rec(["z"], "adversarial", [["z"]]),  # adversarial: out of the overall means, reported on its own
        rec([], "4", [["a"]]),  # no evidence: left out
        _Record(Probe("q", "?", None, ("a",), "1")),  # no long-term results: left out
    ]
    m = longterm_metrics(records)
    assert m["longterm.questions"] == 2
    assert m["longterm.recall@1"] == 0.5 and m["longterm.recall@5"] == 0.75
    assert m["longterm.recall@1.cat_1"] == 1.0 and m["longterm.recall@5.cat_2"] == 0.5
    assert m["longterm.recall@1.cat_adversarial"] == 1.0 and m["longterm.questions.cat_adversarial"] == 1
    assert m["longterm.injected_tokens.mean"] == (100 + 300 + 100) / 3
    assert m["longterm.injected_tokens.mean.cat_4"] == 100 and "longterm.recall@1.cat_4" not in m
    assert m["longterm.ndcg@10.cat_1"] == 1.0
    assert longterm_metrics([]) == {}
