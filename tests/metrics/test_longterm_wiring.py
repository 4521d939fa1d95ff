"""Long-term retrieval metrics in metrics.json: recall@K and nDCG@10 against an independent computation."""

from __future__ import annotations

import math

import pytest
from hand_made import probe
from hypothesis import given, settings
from hypothesis import strategies as st

from memlab.metrics import compute_metrics, probe_rows

EVIDENCE = "longterm.retrieved_evidence"


def independent_recall(evidence: list[str], retrieved: list[list[str]], k: int) -> float:
    return len(set(evidence) & {e for m in retrieved[:k] for e in m}) / len(set(evidence))


def independent_ndcg(evidence: list[str], retrieved: list[list[str]], k: int) -> float:
    """Gain of a memory = evidence ids it cites first; the ideal ranks all gains (missed ids as 1 each) best first."""
    seen: set[str] = set()
    gains = []
    for memory in retrieved:
        new = set(memory) & set(evidence) - seen
        seen |= new
        gains.append(len(new))
    ideal = sorted(gains + [1] * len(set(evidence) - seen), reverse=True)
    dcg = sum(g / math.log2(i + 2) for i, g in enumerate(gains[:k]))
    idcg = sum(g / math.log2(i + 2) for i, g in enumerate(ideal[:k]))
    return dcg / idcg if idcg else 0.0


def test_hand_made_case() -> None:
    records = [
        probe(
            ("a", "b"),
            (),
            pid="q1",
            category="1",
            results={EVIDENCE: [["x"], ["b"], ["y"], ["a", "z"]], "longterm.injected_tokens": 40},
        ),
        probe(("c",), (), pid="q2", category="2", results={EVIDENCE: [["c"]], "longterm.injected_tokens": 20}),
        probe(
            ("d",), (), pid="q3", category="5", results={EVIDENCE: [], "longterm.injected_tokens": 0}
        ),  # adversarial: excluded
    ]
    m = compute_metrics(records)
    assert m["longterm.recall@1"] == (0.0 + 1.0) / 2
    assert m["longterm.recall@5"] == m["longterm.recall@10"] == m["longterm.recall@20"] == 1.0
    # q1: gains [0, 1, 0, 1] -> DCG = 1/log2(3) + 1/log2(5), ideal [1, 1] -> 1 + 1/log2(3)
    q1 = (1 / math.log2(3) + 1 / math.log2(5)) / (1 + 1 / math.log2(3))
    assert m["longterm.ndcg@10"] == pytest.approx((q1 + 1.0) / 2)
    assert m["longterm.injected_tokens.mean"] == 30.0
    assert m["longterm.recall@1.cat_2"] == 1.0 and "longterm.recall@1.cat_5" not in m
    rows = probe_rows(records)
    assert rows[0]["longterm.recall@10"] == 1.0 and rows[0]["longterm.ndcg@10"] == pytest.approx(q1)


ids = st.sampled_from(list("abcdefgh"))


@settings(max_examples=150, deadline=None)
@given(
    evidence=st.lists(ids, min_size=1, max_size=4, unique=True),
    retrieved=st.lists(st.lists(ids, min_size=0, max_size=3), min_size=0, max_size=25),
)
def test_matches_the_independent_computation(evidence: list[str], retrieved: list[list[str]]) -> None:
    m = compute_metrics([probe(tuple(evidence), (), results={EVIDENCE: retrieved})])
    for k in (1, 5, 10, 20):
        assert m[f"longterm.recall@{k}"] == pytest.approx(independent_recall(evidence, retrieved, k))
    assert m["longterm.ndcg@10"] == pytest.approx(independent_ndcg(evidence, retrieved, 10))
