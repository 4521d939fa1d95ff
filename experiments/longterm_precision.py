"""Precision at the top on LoCoMo dev7: the context field's weight and feedback's head, in-sample and held out.

    python experiments/longterm_precision.py [path/to/locomo_dev7.json] [--diagnose out.tsv] [override ...]

Replays the conversations once as ``memlab run dataset=locomo longterm=locomo`` does (the extra overrides go to
that replay), then searches the stored memories with each grid point of `CONTEXT_WEIGHTS` (the BM25 weight of a
memory's context field, `longterm.index.context_weight`) x `HEADS` (the `feedback` stage's head; `None`: no
feedback stage), the other knobs as `longterm=locomo` ships them. Prints recall@1/@5/@10 and nDCG@10 of every
point on all of dev7 (in-sample), then leave-one-conversation-out: for each conversation, the point with the
best nDCG@10 on the other six (the criterion weighs the head and the depth) is scored on the one left out.

``--diagnose out.tsv`` instead compares, question by question, the rank 1 of BM25 over raw turns (memlab's
preprocessing, k1 0.9, b 0.4, rank-bm25's BM25Okapi over ``speaker: text``, as longterm_baselines.py) with the
replayed pipeline's, writes the table (no question text: ids, category and which system had evidence at rank 1)
and counts the questions raw BM25 gets right at rank 1 and memlab does not, by cause: the evidence turn never
stored; a stage moved it off rank 1 (the first that did, from the ranking's trace); BM25Okapi over the memories'
content alone wins but over content + context + date loses (the indexed context); BM25Okapi over the indexed text
wins too (memlab's scoring: fusion, idf); or neither wins (the memory units: merged, split or rewritten).
"""

from __future__ import annotations

import csv
import sys
from collections import Counter
from dataclasses import replace
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import longterm_baselines as lb
from rank_bm25 import BM25Okapi

from memlab import config
from memlab.dialogues import load_locomo
from memlab.longterm.rerank import Feedback
from memlab.runtime import CallContext, SecurityContext
from memlab.text import search_terms

CONTEXT_WEIGHTS = (1.0, 0.5, 0.3, 0.0)
HEADS: tuple[int | None, ...] = (None, 0, 1)
METRICS = ("recall@1", "recall@5", "recall@10", "ndcg@10")
CRITERION = "ndcg@10"


def _first(index: BM25Okapi, ids: list[str], query: str) -> str:
    scores = np.asarray(index.get_scores(search_terms(query)))
    return ids[int(np.lexsort((np.arange(scores.size), -scores))[0])]


def diagnose(dialogues: list, service: object, out: str) -> None:
    """Raw-turn BM25's rank 1 against the pipeline's, per question (`out`, TSV), and its losses by cause."""
    causes: Counter[str] = Counter()
    rows = []
    for d in dialogues:
        ids, texts = lb.turn_units(d)
        turns = BM25Okapi([search_terms(t) for t in texts], k1=0.9, b=0.4)
        end = max(m.timestamp for s in d.sessions for m in s.messages if m.timestamp)
        ctx = CallContext("d", "s", 0, end, SecurityContext(d.user_id, "chat"))
        memories = service.memories(ctx)  # type: ignore[attr-defined]
        mids = [m.id for m in memories]
        cites = {m.id: set(m.evidence) for m in memories}
        content = BM25Okapi([search_terms(m.content) for m in memories], k1=0.9, b=0.4)
        indexed = BM25Okapi([search_terms(f"{m.indexed_text()} {m.context}") for m in memories], k1=0.9, b=0.4)
        for qid, (question, evidence, category) in enumerate(lb.questions(d)):
            ev = set(evidence)
            ranking = service.retrieve(ctx, question, lb.DEPTH, touch=False, trace=True)  # type: ignore[attr-defined]
            raw = _first(turns, ids, question) in ev
            ours = bool(ranking.hits) and bool(cites[ranking.hits[0].memory.id] & ev)
            moved = next(
                (
                    t.stage
                    for t in ranking.stages
                    if t.before
                    and t.after
                    and cites[t.before[0].memory.id] & ev
                    and not cites[t.after[0].memory.id] & ev
                ),
                "",
            )
            rows.append((d.id, qid, category, int(raw), int(ours), moved))
            if raw and not ours:
                if not any(cites[m] & ev for m in mids):
                    cause = "evidence never stored"
                elif moved:
                    cause = f"moved off rank 1 by stage {moved}"
                elif cites[_first(indexed, mids, question)] & ev:
                    cause = "scored differently (BM25Okapi over the indexed text wins)"
                elif cites[_first(content, mids, question)] & ev:
                    cause = "indexed context (BM25Okapi over content alone wins, with context and date loses)"
                else:
                    cause = "memory units (BM25Okapi over the memories loses too)"
                causes[cause] += 1
    with open(out, "w", newline="") as f:
        writer = csv.writer(f, delimiter="\t")
        writer.writerow(["dialogue", "question", "category", "raw_bm25_at_1", "memlab_at_1", "moved_off_by"])
        writer.writerows(rows)
    n = len(rows)
    print(
        f"questions {n}; evidence at rank 1: raw-turn BM25 {sum(r[3] for r in rows) / n:.3f}, "
        f"memlab {sum(r[4] for r in rows) / n:.3f}; raw right and memlab not {sum(causes.values())}, "
        f"memlab right and raw not {sum(r[4] and not r[3] for r in rows)}"
    )
    for cause, count in causes.most_common():
        print(f"  {count:4d}  {cause}")


def _others(run: list, left_out: int) -> float:
    """Mean criterion over the questions of every conversation but `left_out`."""
    return float(np.mean([row[CRITERION] for j, conv in enumerate(run) if j != left_out for _, row in conv]))


def main() -> None:
    args = sys.argv[1:]
    if {"-h", "--help"} & set(args):
        print(__doc__)
        return
    path = args.pop(0) if args and not args[0].count("=") and args[0] != "--diagnose" else str(lb.DEFAULT)
    out = None
    if args[:1] == ["--diagnose"]:
        if len(args) < 2 or "=" in args[1]:
            sys.exit("longterm_precision.py: --diagnose needs the table's path: --diagnose out.tsv")
        out, args = args[1], args[2:]
    config.register()
    dialogues = load_locomo(path)
    _, component = lb.pipeline(dialogues, ["dataset=locomo", *args])
    service = component.service  # type: ignore[attr-defined]
    if out is not None:
        diagnose(dialogues, service, out)
        return
    shipped = next((s for s in service.rerank if isinstance(s, Feedback)), Feedback())
    rest = [s for s in service.rerank if not isinstance(s, Feedback)]
    runs = {}
    for weight in CONTEXT_WEIGHTS:
        for head in HEADS:
            stages = ([replace(shipped, head=head)] if head is not None else []) + rest
            runs[(weight, head)] = lb.searched(
                dialogues, service, replace(service.index_spec, context_weight=weight), stages
            )
    print("| context_weight | feedback head | " + " | ".join(METRICS) + " |")
    print("|---|---|" + "---|" * len(METRICS))
    for (weight, head), run in runs.items():
        pooled = lb.pooled(run)["all"]
        label = "no feedback" if head is None else str(head)
        print(f"| {weight} | {label} | " + " | ".join(f"{pooled[m]:.3f}" for m in METRICS) + " |")
    print()
    print(
        f"| left out | questions | fitted on the other six ({CRITERION}): context_weight, head | "
        + " | ".join(METRICS)
        + " |"
    )
    print("|---|---|---|" + "---|" * len(METRICS))
    held_out = []
    points = list(runs)
    for i, d in enumerate(dialogues):
        best = max(points, key=lambda p: (_others(runs[p], i), -points.index(p)))  # ties: the earlier point
        fold = runs[best][i]
        held_out.append(fold)
        means = [np.mean([row[m] for _, row in fold]) for m in METRICS]
        print(f"| {d.id} | {len(fold)} | {best[0]}, {best[1]} | " + " | ".join(f"{v:.3f}" for v in means) + " |")
    pooled = lb.pooled(held_out)["all"]
    print(f"| all (pooled) | {pooled['n']:.0f} | | " + " | ".join(f"{pooled[m]:.3f}" for m in METRICS) + " |")


if __name__ == "__main__":
    main()
