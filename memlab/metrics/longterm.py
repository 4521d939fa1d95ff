"""Long-term retrieval metrics: pure functions of the evidence ids and the retrieved memories.

A question's relevant units are its evidence turns; each retrieved memory cites the turns it
came from. Two families, named for what they count:

- memory units, K counting memories (BEIR's definitions over turns):
  ``recall@k``: share of the evidence turns cited by the top k memories (fractional);
  ``ndcg@k``: a memory's gain is the number of evidence turns it is first to cite (a repeat earns
  nothing); the ideal DCG sorts every gain, the evidence turns no memory cited counting 1 each, in
  decreasing order (graded relevance, linear gain, log2 discount: ranx's and trec_eval's ndcg).
- turn units, K counting turns (LongMemEval, ``src/retrieval/eval_utils.py``): the ranking is the
  cited turns in the order the memories first cite them;
  ``recall_any@k`` / ``recall_all@k``: 1 if any / every evidence turn is among the top k turns;
  ``ndcg_any@k``: binary nDCG over that turn ranking, the ideal placing every evidence turn first,
  with LongMemEval's discount (rank 1 and 2 undiscounted, rank i > 1 divided by log2 i), which
  differs from the log2(i + 1) of ``ndcg@k``.

- the top of the ranking, memory units: ``precision@1``: 1 if the rank-1 memory cites any evidence turn;
  ``mrr``: 1 / the rank of the first memory citing any evidence turn (0 when none of the retrieved does).
  A memory is relevant when it cites an evidence turn, so a memory citing two counts once. ranx's
  ``precision@1`` and ``mrr`` on ``retrievals.trec``/``.qrels`` judge TREC docids (turns), yet give the same
  values: the first memory citing evidence is first to cite it, so `credited_docids` names it by an evidence
  turn, and no memory before it has an evidence docid (exact, unlike ``ndcg@k``'s gain of 2).

With one turn per memory the two families agree on K. Overall means leave out the categories in
`excluded` (by default LoCoMo's adversarial questions, as the references report them); each
category, excluded ones included, is also reported on its own as ``<name>.cat_<category>``.

>>> recall_at_k(["D1:3", "D2:1"], [["D2:1"], ["D9:9"], ["D1:3"]], 2)
0.5
>>> round(ndcg_at_k(["a", "b"], [["x"], ["a", "b"]], 10), 4)  # gains [0, 2]; ideal [2]
0.6309
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from memlab.dialogues.locomo import ADVERSARIAL
from memlab.dialogues.model import DECOYS_KEY, SUPERSEDED_KEY
from memlab.metrics.family import metric_family

K_VALUES = (1, 5, 10, 20)
NDCG_K = 10
EXCLUDED_CATEGORIES = (ADVERSARIAL,)  # left out of the overall means, reported on their own
EVIDENCE_KEY = "longterm.retrieved_evidence"
INJECTED_TOKENS_KEY = "longterm.injected_tokens"
UPDATE_DEPTH = 10  # longterm.newer_missed@10: the newer statement is not among this many memories


def _wanted(evidence: Iterable[str]) -> set[str]:
    wanted = set(evidence)
    if not wanted:
        raise ValueError("retrieval metrics are undefined for a question without evidence")
    return wanted


def _dcg(gains: Sequence[float], k: int) -> float:
    """DCG with the log2(rank + 1) discount (ranx, trec_eval, sklearn)."""
    return sum(g / math.log2(rank + 2) for rank, g in enumerate(gains[:k]))


def _dcg_longmemeval(gains: Sequence[float], k: int) -> float:
    """DCG as LongMemEval computes it: the first gain whole, the one at rank i > 1 over log2(i)."""
    return sum(g / math.log2(rank + 1) if rank else g for rank, g in enumerate(gains[:k]))


def recall_at_k(evidence: Iterable[str], retrieved: Sequence[Sequence[str]], k: int) -> float:
    """Share of `evidence` cited by the first `k` retrieved memories (each a list of turn ids).

    Args:
        evidence: The gold evidence turn ids.
        retrieved: The retrieved memories, best first, each as the turn ids it cites.
        k: How many retrieved memories count.
    """
    wanted = _wanted(evidence)
    cited = {e for memory in retrieved[:k] for e in memory}
    return len(wanted & cited) / len(wanted)


def ndcg_at_k(evidence: Iterable[str], retrieved: Sequence[Sequence[str]], k: int = NDCG_K) -> float:
    """nDCG@k over memories, each gaining the evidence turns it is first to cite (module docstring).

    Args:
        evidence: The gold evidence turn ids.
        retrieved: The retrieved memories, best first, each as the turn ids it cites.
        k: How many retrieved memories count.
    """
    wanted = _wanted(evidence)
    seen: set[str] = set()
    gains = []
    for memory in retrieved:
        new = (wanted & set(memory)) - seen
        seen |= new
        gains.append(float(len(new)))
    ideal = sorted([g for g in gains if g > 0] + [1.0] * len(wanted - seen), reverse=True)
    return _dcg(gains, k) / _dcg(ideal, k)


def precision_at_1(evidence: Iterable[str], retrieved: Sequence[Sequence[str]]) -> float:
    """1.0 if the rank-1 memory cites any evidence turn (ranx's ``precision@1`` over memories).

    >>> precision_at_1(["a"], [["x", "a"], ["b"]]), precision_at_1(["a"], [["x"], ["a"]]), precision_at_1(["a"], [])
    (1.0, 0.0, 0.0)
    """
    return float(first_citing(_wanted(evidence), retrieved) == 0)


def reciprocal_rank(evidence: Iterable[str], retrieved: Sequence[Sequence[str]]) -> float:
    """1 / the rank of the first memory citing any evidence turn; 0.0 when none does (ranx's ``mrr`` per question).

    >>> reciprocal_rank(["a", "b"], [["x"], ["y"], ["b"]]), reciprocal_rank(["a"], [["x"]])
    (0.3333333333333333, 0.0)
    """
    rank = first_citing(_wanted(evidence), retrieved)
    return 0.0 if rank is None else 1.0 / (rank + 1)


def turn_ranking(retrieved: Sequence[Sequence[str]]) -> list[str]:
    """The turns the memories cite, in the order they are first cited."""
    return list(dict.fromkeys(t for memory in retrieved for t in memory))


def recall_any_at_k(evidence: Iterable[str], retrieved: Sequence[Sequence[str]], k: int) -> float:
    """1.0 if any evidence turn is among the first `k` cited turns (LongMemEval's recall_any)."""
    return float(bool(_wanted(evidence) & set(turn_ranking(retrieved)[:k])))


def recall_all_at_k(evidence: Iterable[str], retrieved: Sequence[Sequence[str]], k: int) -> float:
    """1.0 if every evidence turn is among the first `k` cited turns (LongMemEval's recall_all)."""
    return float(_wanted(evidence) <= set(turn_ranking(retrieved)[:k]))


def ndcg_any_at_k(evidence: Iterable[str], retrieved: Sequence[Sequence[str]], k: int = NDCG_K) -> float:
    """Binary nDCG@k over the cited turns, the ideal ranking every evidence turn first (LongMemEval's ndcg)."""
    wanted = _wanted(evidence)
    gains = [1.0 if t in wanted else 0.0 for t in turn_ranking(retrieved)]
    return _dcg_longmemeval(gains, k) / _dcg_longmemeval([1.0] * len(wanted), k)


def retrieval_scores(
    evidence: Sequence[str], retrieved: Sequence[Sequence[str]], k_values: Sequence[int] = K_VALUES
) -> dict[str, float]:
    """Every retrieval metric of one question (names without the ``longterm.`` prefix)."""
    row: dict[str, float] = {}
    for k in k_values:
        row[f"recall@{k}"] = recall_at_k(evidence, retrieved, k)
        row[f"recall_any@{k}"] = recall_any_at_k(evidence, retrieved, k)
        row[f"recall_all@{k}"] = recall_all_at_k(evidence, retrieved, k)
    row["precision@1"] = precision_at_1(evidence, retrieved)
    row["mrr"] = reciprocal_rank(evidence, retrieved)
    row[f"ndcg@{NDCG_K}"] = ndcg_at_k(evidence, retrieved, NDCG_K)
    row[f"ndcg_any@{NDCG_K}"] = ndcg_any_at_k(evidence, retrieved, NDCG_K)
    return row


@metric_family
def longterm_metrics(
    probes: Iterable[Any],
    k_values: Sequence[int] = K_VALUES,
    excluded: Sequence[str] = EXCLUDED_CATEGORIES,
) -> dict[str, float | int]:
    """``longterm.recall@K``, ``precision@1``, ``mrr`` and the rest, ``longterm.injected_tokens.mean``, overall and
    per category.

    `probes` are `ProbeRecord`s (anything with ``probe.evidence``, ``probe.category`` and a
    ``results`` mapping). The retrieval metrics are over the probes with evidence, which
    ``longterm.questions`` counts; ``longterm.injected_tokens.mean`` is per probe, over every probe a
    long-term component retrieved for, with evidence or not (the block is injected either way, and
    questions.csv records it for each). Categories in `excluded` are left out of both overall means.
    Empty when no probe carries long-term results.

    Args:
        probes: The run's probe records (those with long-term results count).
        k_values: The K of each `@K` metric.
        excluded: Question categories left out of the overall means.
    """
    rows: list[tuple[str, dict[str, float]]] = []
    injected: list[tuple[str, dict[str, float]]] = []
    for record in probes:
        results: Mapping[str, Any] = record.results
        if EVIDENCE_KEY not in results:
            continue
        category = str(record.probe.category)
        injected.append((category, {"injected_tokens.mean": float(results.get(INJECTED_TOKENS_KEY, 0))}))
        evidence = [e for e in record.probe.evidence if e]
        if evidence:
            rows.append((category, retrieval_scores(evidence, [list(m) for m in results[EVIDENCE_KEY]], k_values)))
    if not injected:
        return {}
    out: dict[str, float | int] = {}
    if rows:
        out["longterm.questions"] = sum(c not in excluded for c, _ in rows)
        counts = Counter(c for c, _ in rows)
        out.update({f"longterm.questions.cat_{c}": counts[c] for c in sorted(counts)})
    return out | _grouped_means(rows, excluded) | _grouped_means(injected, excluded)


def _grouped_means(family: list[tuple[str, dict[str, float]]], excluded: Sequence[str]) -> dict[str, float]:
    """The means of `family`'s (category, row) rows: overall (categories in `excluded` left out) and per category."""
    overall = [r for c, r in family if c not in excluded]
    out = _means("", overall) if overall else {}
    by_category: dict[str, list[dict[str, float]]] = defaultdict(list)
    for category, row in family:
        by_category[category].append(row)
    for category in sorted(by_category):
        out.update(_means(f".cat_{category}", by_category[category]))
    return out


def _means(suffix: str, rows: list[dict[str, float]]) -> dict[str, float]:
    return {f"longterm.{name}{suffix}": float(np.mean([r[name] for r in rows])) for name in rows[0]}


def first_citing(turns: Iterable[str], retrieved: Sequence[Sequence[str]]) -> int | None:
    """The 0-based rank of the first memory citing any of `turns`; None when none does.

    >>> first_citing(["D1:2"], [["D9:9"], ["D1:2", "D1:3"]]), first_citing(["D4:4"], [["D9:9"]])
    (1, None)
    """
    wanted = set(turns)
    return next((i for i, memory in enumerate(retrieved) if wanted & set(memory)), None)


def newer_first(newer: str, superseded: Iterable[str], retrieved: Sequence[Sequence[str]]) -> bool | None:
    """Whether the first memory citing `newer` ranks above every memory citing a `superseded` turn
    (True when only the newer is retrieved); None when neither is.

    >>> newer_first("D5:1", ["D1:2"], [["D9:9"], ["D5:1"], ["D1:2"]]), newer_first("D5:1", ["D1:2"], [["D1:2"]])
    (True, False)
    """
    at_newer, at_old = first_citing([newer], retrieved), first_citing(superseded, retrieved)
    if at_newer is None and at_old is None:
        return None
    return at_newer is not None and (at_old is None or at_newer < at_old)


def _related(probes: Iterable[Any], key: str) -> list[tuple[str, tuple[str, ...], Sequence[Sequence[str]]]]:
    """(first evidence turn, the turns under `key` in the probe's metadata, retrieved memories) of every probe
    that has both and long-term results."""
    return [
        (record.probe.evidence[0], tuple(related), record.results[EVIDENCE_KEY])
        for record in probes
        if (related := record.probe.metadata.get(key)) and record.probe.evidence and EVIDENCE_KEY in record.results
    ]


@metric_family
def newer_first_metrics(probes: Iterable[Any]) -> dict[str, float | int]:
    """``longterm.newer_first``: over the probes of updated facts (a ``superseded`` list in their metadata: the
    synthetic generator's UPDATE, datasets/updates/) where the newer or a superseded statement is among the
    retrieved memories, the share where the first memory citing the newer ranks above every memory citing a
    superseded one (`newer_first`); ``longterm.newer_first.probes`` counts them. Empty without such probes."""
    outcomes = [newer_first(newer, older, got) for newer, older, got in _related(probes, SUPERSEDED_KEY)]
    counted = [o for o in outcomes if o is not None]
    if not counted:
        return {}
    return {"longterm.newer_first": sum(counted) / len(counted), "longterm.newer_first.probes": len(counted)}


@metric_family
def update_rank_metrics(probes: Iterable[Any]) -> dict[str, float | int]:
    """The top of the ranking on updated facts, over every probe with a ``superseded`` list (none left out, unlike
    ``longterm.newer_first``): ``longterm.newer@1``, the top memory cites the newer statement;
    ``longterm.older@1``, it cites a superseded one (a memory citing both counts for both);
    ``longterm.newer_missed@10``, no memory of the top 10 cites the newer one. ``longterm.update_probes`` counts
    them; empty without such probes."""
    ranks = [(first_citing([new], got), first_citing(old, got)) for new, old, got in _related(probes, SUPERSEDED_KEY)]
    if not ranks:
        return {}
    n = len(ranks)
    return {
        "longterm.update_probes": n,
        "longterm.newer@1": sum(newer == 0 for newer, _ in ranks) / n,
        "longterm.older@1": sum(older == 0 for _, older in ranks) / n,
        f"longterm.newer_missed@{UPDATE_DEPTH}": sum(newer is None or newer >= UPDATE_DEPTH for newer, _ in ranks) / n,
    }


@metric_family
def decoy_metrics(probes: Iterable[Any]) -> dict[str, float | int]:
    """Cue words that revise nothing, over every probe with ``decoys`` (later turns that sound like a revision of
    its evidence, e.g. datasets/updates/misfire_*.json): ``longterm.decoy_above``, a memory citing a decoy ranks
    above every memory citing the evidence (or it alone is retrieved; a tie is not above);
    ``longterm.decoy_answer@1``, the top memory cites the evidence. ``longterm.decoy_probes`` counts them;
    empty without such probes."""
    ranks = [
        (first_citing([answer], got), first_citing(later, got)) for answer, later, got in _related(probes, DECOYS_KEY)
    ]
    if not ranks:
        return {}
    n = len(ranks)
    return {
        "longterm.decoy_probes": n,
        "longterm.decoy_above": sum(d is not None and (a is None or d < a) for a, d in ranks) / n,
        "longterm.decoy_answer@1": sum(a == 0 for a, _ in ranks) / n,
    }


RETRIEVAL_KEY = "longterm.retrieval"  # a probe's ranked ids, scores, cited turns and stage moves (memlab.longterm)


def retrieval_lines(probes: Iterable[Any], excluded: Sequence[str] = EXCLUDED_CATEGORIES) -> list[dict[str, Any]]:
    """One ``retrievals.jsonl`` line per probe a long-term component retrieved for, in probe order.

    Each line: ``qid`` (the probe id, as questions.csv's ``probe`` and questions.jsonl's ``question_id``: the
    loaders make it unique in a run), ``dialogue``, ``category``,
    ``evidence``, ``scored`` (counted in the overall means: it has evidence, its category is not excluded),
    ``ranked`` (``[memory id, score, [cited turns]]``, best first) and ``stages`` (each re-ranking stage's
    ``moved`` ``[memory id, rank before, rank after]`` and the first evidence-citing rank before and after).
    """
    out = []
    for record in probes:
        entry = record.results.get(RETRIEVAL_KEY)
        if entry is None:
            continue
        probe = record.probe
        evidence = [e for e in probe.evidence if e]
        qid = str(probe.id)
        scored = bool(evidence) and str(probe.category) not in excluded
        out.append(
            {"qid": qid, "dialogue": record.dialogue_id, "category": str(probe.category), "evidence": evidence}
            | {"scored": scored, **entry}
        )
    return out


def credited_docids(evidence: Iterable[str], ranked: Sequence[Sequence[str]], memory_ids: Sequence[str]) -> list[str]:
    """The TREC docid of each ranked memory: the evidence turn it is first to cite (what recall@K and nDCG
    credit it with), else a cited turn that is no evidence and not yet named, else its memory id.

    Exact for ranx as long as no memory is first to cite two evidence turns of one question (a gain of 2,
    which one docid per rank cannot carry).

    >>> credited_docids(["D1:2"], [["D1:1", "D1:2"], ["D1:2"], ["D1:1"]], ["m1", "m2", "m3"])
    ['D1:2', 'm2', 'D1:1']
    """
    wanted, used = set(evidence), set()
    out = []
    for turns, memory_id in zip(ranked, memory_ids, strict=True):
        new = [t for t in turns if t in wanted and t not in used]
        spare = [t for t in turns if t not in wanted and t not in used]
        docid = new[0] if new else spare[0] if spare else memory_id
        used.update(new or [docid])
        out.append(docid)
    return out


def trec_run(lines: Iterable[Mapping[str, Any]], run_name: str) -> str:
    """``retrievals.trec``: ``qid Q0 docid rank score run_name`` per scored memory, docids `credited_docids`.

    The score column is ``len(ranked) - rank`` (the memories' own scores, which tie, are in retrievals.jsonl),
    so a reader's tie-break cannot reorder the ranking.
    """
    rows = []
    for line in lines:
        if not line["scored"]:
            continue
        ranked = line["ranked"]
        docids = credited_docids(line["evidence"], [turns for *_, turns in ranked], [m for m, *_ in ranked])
        rows += [f"{line['qid']} Q0 {d} {i + 1} {len(ranked) - i} {run_name}" for i, d in enumerate(docids)]
    return "".join(f"{row}\n" for row in rows)


def trec_qrels(lines: Iterable[Mapping[str, Any]]) -> str:
    """``retrievals.qrels``: ``qid 0 turn 1`` per evidence turn of each scored question."""
    rows = [f"{line['qid']} 0 {e} 1" for line in lines if line["scored"] for e in dict.fromkeys(line["evidence"])]
    return "".join(f"{row}\n" for row in rows)
