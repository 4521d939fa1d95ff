"""Long-term retrieval metrics: recall@K and nDCG@10 in metrics.json, checked against ranx and LongMemEval."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from hand_made import probe
from hypothesis import given, settings
from hypothesis import strategies as st

from memlab.experiment import run_experiment
from memlab.metrics import compute_metrics, probe_rows
from memlab.metrics.longterm import (
    ndcg_any_at_k,
    ndcg_at_k,
    precision_at_1,
    recall_all_at_k,
    recall_any_at_k,
    reciprocal_rank,
)

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
            ("d",), (), pid="q3", category="adversarial", results={EVIDENCE: [["d"]], "longterm.injected_tokens": 0}
        ),  # adversarial: out of the overall means, reported on its own
    ]
    m = compute_metrics(records)
    assert m["longterm.recall@1"] == (0.0 + 1.0) / 2
    assert m["longterm.recall@5"] == m["longterm.recall@10"] == m["longterm.recall@20"] == 1.0
    # q1: gains [0, 1, 0, 1] -> DCG = 1/log2(3) + 1/log2(5), ideal [1, 1] -> 1 + 1/log2(3)
    q1 = (1 / math.log2(3) + 1 / math.log2(5)) / (1 + 1 / math.log2(3))
    assert m["longterm.ndcg@10"] == pytest.approx((q1 + 1.0) / 2)
    assert m["longterm.injected_tokens.mean"] == 30.0
    assert m["longterm.recall@1.cat_2"] == 1.0 and m["longterm.recall@1.cat_adversarial"] == 1.0
    assert m["longterm.questions"] == 2 and m["longterm.questions.cat_adversarial"] == 1
    rows = probe_rows(records)
    assert rows[0]["longterm.recall@10"] == 1.0 and rows[0]["longterm.ndcg@10"] == pytest.approx(q1)


def test_injected_tokens_are_averaged_over_every_probe_retrieved_for(make_config: Any, tmp_path: Path) -> None:
    """The defect: the mean covered only probes with evidence, while questions.csv records the block for each."""
    ana = [
        {"role": "user", "id": "m1", "content": "I work as a nurse at the city hospital."},
        {"role": "assistant", "content": "That sounds demanding."},
        {"role": "user", "id": "m3", "content": "Actually I changed jobs: I am a paramedic now."},
        {"role": "assistant", "content": "Congratulations!"},
    ]
    short = [{"role": "user", "id": "n1", "content": "I live in Oslo and I like cats."}]
    lines = [
        {"id": "ana", "messages": ana, "probes": [{"question": "My job?", "answer": "paramedic", "evidence": ["m3"]}]},
        {  # no evidence: not scored, yet retrieved for, with a block of another size
            "id": "oslo",
            "messages": short,
            "probes": [{"question": "Where?", "evidence": ["n1"]}, {"question": "Anything?", "answer": "no"}],
        },
    ]
    data = tmp_path / "edge.jsonl"
    data.write_text("".join(json.dumps(line) + "\n" for line in lines))
    cfg = make_config("dataset=jsonl", f"dataset.path={data}", "longterm=chat", "context=trim")
    run_dir = run_experiment(cfg, tmp_path / "run").run_dir
    metrics = json.loads((run_dir / "metrics.json").read_text())
    questions = pd.read_csv(run_dir / "questions.csv")
    injected = questions["longterm.injected_tokens"]
    assert injected.notna().all() and injected.nunique() > 1 and metrics["longterm.questions"] == 2
    assert metrics["longterm.injected_tokens.mean"] == pytest.approx(injected.mean(), abs=1e-6)
    for category, group in questions.groupby("category"):
        got = metrics[f"longterm.injected_tokens.mean.cat_{category}"]
        assert got == pytest.approx(group["longterm.injected_tokens"].mean(), abs=1e-6)


ids = st.sampled_from(list("abcdefgh"))


@settings(max_examples=150)
@given(
    evidence=st.lists(ids, min_size=1, max_size=4, unique=True),
    retrieved=st.lists(st.lists(ids, min_size=0, max_size=3), min_size=0, max_size=25),
)
def test_matches_the_independent_computation(evidence: list[str], retrieved: list[list[str]]) -> None:
    m = compute_metrics([probe(tuple(evidence), (), results={EVIDENCE: retrieved})])
    for k in (1, 5, 10, 20):
        assert m[f"longterm.recall@{k}"] == pytest.approx(independent_recall(evidence, retrieved, k))
    assert m["longterm.ndcg@10"] == pytest.approx(independent_ndcg(evidence, retrieved, 10))


# ---- against ranx and LongMemEval's eval_utils.py, on hand cases where one memory cites several turns
CASES = [
    # (evidence, retrieved memories)
    (["a", "b"], [["x"], ["a", "b"]]),  # one memory cites both evidence turns, at rank 2
    (["a", "b", "c"], [["a", "b"], ["y"], ["c", "a"], ["b"]]),  # repeats earn nothing
    (["a", "b", "c"], [["z", "a"], ["b", "c", "q"]]),
    (["a"], [["q"], ["r"], ["s"]]),  # nothing found
    (["a", "b"], [["a", "x", "y", "z"], ["w", "v"], ["b"]]),  # turn units: b is the 7th turn
]


def ranx_ndcg(qrels: dict[str, int], run: list[str], k: int) -> float:
    ranx = pytest.importorskip("ranx")
    scores = {doc: float(len(run) - i) for i, doc in enumerate(run)}
    if not scores:
        return 0.0
    return float(ranx.evaluate(ranx.Qrels({"q": qrels}), ranx.Run({"q": scores}), f"ndcg@{k}"))


def longmemeval_ndcg(rankings: list[int], correct_docs: list[str], corpus_ids: list[str], k: int) -> float:
    """LongMemEval src/retrieval/eval_utils.py `ndcg` (np.asfarray spelled for numpy 2)."""

    def dcg(relevances: list[int], k: int) -> float:
        rel = np.asarray(relevances, dtype=float)[:k]
        return float(rel[0] + np.sum(rel[1:] / np.log2(np.arange(2, rel.size + 1)))) if rel.size else 0.0

    relevances = [1 if doc_id in correct_docs else 0 for doc_id in corpus_ids]
    sorted_relevances = [relevances[idx] for idx in rankings[:k]]
    ideal_dcg = dcg(sorted(relevances, reverse=True), k)
    return 0.0 if ideal_dcg == 0 else dcg(sorted_relevances, k) / ideal_dcg


def longmemeval(evidence: list[str], retrieved: list[list[str]], k: int) -> tuple[float, float, float]:
    """`evaluate_retrieval` with turns as the corpus: the cited turns ranked first, the rest not retrieved."""
    ranked = list(dict.fromkeys(t for m in retrieved for t in m))
    corpus_ids = ranked + [e for e in evidence if e not in ranked] + ["never-cited"]
    rankings = list(range(len(ranked)))
    recalled = {corpus_ids[i] for i in rankings[:k]}
    return (
        float(any(d in recalled for d in evidence)),
        float(all(d in recalled for d in evidence)),
        longmemeval_ndcg(rankings, evidence, corpus_ids, k),
    )


@pytest.mark.parametrize(("evidence", "retrieved"), CASES)
@pytest.mark.parametrize("k", [1, 2, 3, 10])
def test_ndcg_matches_ranx(evidence: list[str], retrieved: list[list[str]], k: int) -> None:
    # memory units: each memory judged by the evidence turns it is first to cite; missed turns judged 1 each
    seen: set[str] = set()
    qrels: dict[str, int] = {}
    for i, memory in enumerate(retrieved):
        new = set(memory) & set(evidence) - seen
        seen |= new
        if new:
            qrels[f"m{i}"] = len(new)
    qrels.update({f"missed-{e}": 1 for e in set(evidence) - seen})
    expected = ranx_ndcg(qrels, [f"m{i}" for i in range(len(retrieved))], k)
    assert ndcg_at_k(evidence, retrieved, k) == pytest.approx(expected, abs=1e-12)


def ranx_top(qrels: dict[str, int], run: list[str]) -> tuple[float, float]:
    ranx = pytest.importorskip("ranx")
    scores = {doc: float(len(run) - i) for i, doc in enumerate(run)}
    if not scores:
        return 0.0, 0.0
    got = ranx.evaluate(ranx.Qrels({"q": qrels}), ranx.Run({"q": scores}), ["precision@1", "mrr"])
    return float(got["precision@1"]), float(got["mrr"])


@pytest.mark.parametrize(("evidence", "retrieved"), [*CASES, (["a"], []), (["a", "b"], [["b", "a"]])])
def test_precision_at_1_and_mrr_match_ranx(evidence: list[str], retrieved: list[list[str]]) -> None:
    # memory units: a memory is relevant (1) when it cites any evidence turn, however many
    qrels = {f"m{i}": 1 for i, memory in enumerate(retrieved) if set(memory) & set(evidence)} or {"missed": 1}
    p1, mrr = ranx_top(qrels, [f"m{i}" for i in range(len(retrieved))])
    assert precision_at_1(evidence, retrieved) == p1
    assert reciprocal_rank(evidence, retrieved) == pytest.approx(mrr, abs=1e-12)


def test_precision_at_1_and_mrr_in_metrics_json_per_category() -> None:
    records = [
        probe(("a",), (), pid="q1", category="1", results={EVIDENCE: [["x"], ["y"], ["a"]]}),
        probe(("b", "c"), (), pid="q2", category="2", results={EVIDENCE: [["c", "b"], ["b"]]}),
        probe(("d",), (), pid="q3", category="2", results={EVIDENCE: [["x"]]}),
        probe(("e",), (), pid="q4", category="adversarial", results={EVIDENCE: [["e"]]}),
    ]
    m = compute_metrics(records)
    assert m["longterm.precision@1"] == pytest.approx(1 / 3)
    assert m["longterm.mrr"] == pytest.approx((1 / 3 + 1 + 0) / 3)
    assert m["longterm.precision@1.cat_2"] == 0.5 and m["longterm.mrr.cat_1"] == pytest.approx(1 / 3)
    assert m["longterm.precision@1.cat_adversarial"] == m["longterm.mrr.cat_adversarial"] == 1.0


@pytest.mark.parametrize(("evidence", "retrieved"), CASES)
@pytest.mark.parametrize("k", [1, 2, 3, 10])
def test_turn_unit_metrics_match_longmemeval(evidence: list[str], retrieved: list[list[str]], k: int) -> None:
    any_, all_, ndcg = longmemeval(evidence, retrieved, k)
    assert recall_any_at_k(evidence, retrieved, k) == any_
    assert recall_all_at_k(evidence, retrieved, k) == all_
    assert ndcg_any_at_k(evidence, retrieved, k) == pytest.approx(ndcg, abs=1e-12)


def test_a_memory_citing_two_evidence_turns_known_values() -> None:
    # gains [0, 2]; the ideal ranking puts the 2-gain memory first: (2/log2 3) / (2/log2 2)
    assert ndcg_at_k(["a", "b"], [["x"], ["a", "b"]], 10) == pytest.approx(1 / math.log2(3))
    # turn units, LongMemEval's discount (1, 1, 1/log2 3, ...): ranking x, a, b -> DCG 1 + 1/log2 3; ideal 1 + 1
    expected = (1 + 1 / math.log2(3)) / 2
    assert ndcg_any_at_k(["a", "b"], [["x"], ["a", "b"]], 10) == pytest.approx(expected)
    assert recall_any_at_k(["a", "b"], [["x"], ["a", "b"]], 2) == 1.0
    assert recall_all_at_k(["a", "b"], [["x"], ["a", "b"]], 2) == 0.0
    assert recall_all_at_k(["a", "b"], [["x"], ["a", "b"]], 3) == 1.0
