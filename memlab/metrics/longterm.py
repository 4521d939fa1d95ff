"""Long-term retrieval metrics: pure functions of the evidence ids and the retrieved memories.

A question's relevant units are its evidence turns; a retrieved memory cites the turns it
came from. BEIR's definitions over those units:

- ``recall@k``: share of the question's evidence ids cited by the top k memories;
- ``ndcg@k``: each memory gains the evidence ids it cites that no better-ranked memory cited
  (so a repeat earns nothing), the ideal ranking cites one new evidence id per position;
  computed with `sklearn.metrics.ndcg_score`.

Questions without evidence, and LoCoMo's category 5 (adversarial: no answer in the
conversation), are left out, as the issue defines the measurement.

>>> recall_at_k(["D1:3", "D2:1"], [["D2:1"], ["D9:9"], ["D1:3"]], 2)
0.5
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

K_VALUES = (1, 5, 10, 20)
NDCG_K = 10
EXCLUDED_CATEGORIES = ("5",)  # LoCoMo adversarial questions have no evidence to retrieve
EVIDENCE_KEY = "longterm.retrieved_evidence"
INJECTED_TOKENS_KEY = "longterm.injected_tokens"


def recall_at_k(evidence: Iterable[str], retrieved: Sequence[Sequence[str]], k: int) -> float:
    """Share of `evidence` cited by the first `k` retrieved memories (each a list of turn ids)."""
    wanted = set(evidence)
    if not wanted:
        raise ValueError("recall is undefined for a question without evidence")
    cited = {e for memory in retrieved[:k] for e in memory}
    return len(wanted & cited) / len(wanted)


def ndcg_at_k(evidence: Iterable[str], retrieved: Sequence[Sequence[str]], k: int = NDCG_K) -> float:
    """nDCG@k with novel evidence ids as gains (see the module docstring)."""
    wanted = set(evidence)
    if not wanted:
        raise ValueError("nDCG is undefined for a question without evidence")
    seen: set[str] = set()
    gains = []
    for memory in retrieved:
        new = (wanted & set(memory)) - seen
        seen |= new
        gains.append(float(len(new)))
    # Evidence no memory cited stays in the ideal ranking: one unit each, ranked below the cut-off
    # (after zero-gain fillers), so it raises the ideal DCG but never earns DCG itself.
    gains += [0.0] * max(k - len(gains), 0) + [1.0] * len(wanted - seen)
    if len(gains) < 2:  # sklearn needs two documents; one relevant document at rank one is perfect
        return 1.0 if gains and gains[0] > 0 else 0.0
    scores = -np.arange(len(gains), dtype=float)
    from sklearn.metrics import ndcg_score  # imported on use: scikit-learn takes a second to import

    return float(ndcg_score(np.asarray([gains]), np.asarray([scores]), k=k))


def longterm_metrics(
    probes: Iterable[Any],
    k_values: Sequence[int] = K_VALUES,
    ndcg_k: int = NDCG_K,
    excluded_categories: Sequence[str] = EXCLUDED_CATEGORIES,
) -> dict[str, float]:
    """``longterm.recall@K``, ``longterm.ndcg@10``, ``longterm.injected_tokens.mean`` and each per category.

    `probes` are `ProbeRecord`s (anything with ``probe.evidence``, ``probe.category`` and a
    ``results`` mapping). Per-category names end in ``.category.<c>``; ``longterm.questions``
    counts what was measured. Empty when no probe carries long-term results.
    """
    rows: list[tuple[str, dict[str, float]]] = []
    for record in probes:
        results: Mapping[str, Any] = record.results
        if EVIDENCE_KEY not in results:
            continue
        category = str(record.probe.category)
        evidence = [e for e in record.probe.evidence if e]
        if category in excluded_categories or not evidence:
            continue
        retrieved = [list(m) for m in results[EVIDENCE_KEY]]
        row = {f"recall@{k}": recall_at_k(evidence, retrieved, k) for k in k_values}
        row[f"ndcg@{ndcg_k}"] = ndcg_at_k(evidence, retrieved, ndcg_k)
        row["injected_tokens.mean"] = float(results.get(INJECTED_TOKENS_KEY, 0))
        rows.append((category, row))
    if not rows:
        return {}
    out = {"longterm.questions": float(len(rows))}
    out.update(_means("longterm.", "", [r for _, r in rows]))
    by_category: dict[str, list[dict[str, float]]] = defaultdict(list)
    for category, row in rows:
        by_category[category].append(row)
    for category in sorted(by_category):
        out[f"longterm.questions.category.{category}"] = float(len(by_category[category]))
        out.update(_means("longterm.", f".category.{category}", by_category[category]))
    return out


def _means(prefix: str, suffix: str, rows: list[dict[str, float]]) -> dict[str, float]:
    return {f"{prefix}{name}{suffix}": float(np.mean([r[name] for r in rows])) for name in rows[0]}
