"""The issue's measurement: long-term recall on LoCoMo (dev7) with the offline default configuration.

Every conversation is one user's history; memories are extracted turn by turn by the offline
extractive model, and each question (category 5 excluded) is answered by retrieval over that
conversation's memories at its end. The reference to beat: BM25 + MiniLM reciprocal-rank fusion
over raw turns, recall@10 = 0.55 on all ten LoCoMo conversations.

Run with ``-s`` to print its per-category table (docs/longterm.md quotes its "all" row next to `memlab run`'s).
"""

from __future__ import annotations

import numpy as np
import pytest
from hydra.utils import instantiate
from rank_bm25 import BM25Okapi

from memlab.dialogues import load_locomo
from memlab.memory import InMemoryChatMemory
from memlab.metrics.longterm import EXCLUDED_CATEGORIES, longterm_metrics, recall_at_k
from memlab.runtime import Runtime, SecurityContext
from memlab.sim import ProbeRecord, simulate
from memlab.text import search_terms
from memlab.tokens import get_counter

REFERENCE_RRF_RECALL_AT_10 = 0.55  # the reference: BM25 + all-MiniLM-L6-v2 fused by RRF, turns as units
GOAL_RECALL_AT_10 = 0.68  # issue 15: 7 points above BM25 with memlab's preprocessing over raw turns (0.610)


@pytest.mark.slow
def test_offline_default_beats_the_rrf_reference_on_locomo(make_config, locomo_path) -> None:
    cfg = make_config("longterm=locomo", "agent_id=chat")
    component = instantiate(cfg.longterm)
    counter = get_counter(cfg.tokenizer)
    dialogues = load_locomo(locomo_path)
    records = simulate(
        dialogues,
        lambda d: Runtime(InMemoryChatMemory(d.id), counter, SecurityContext(d.user_id, cfg.agent_id), [component]),
    )
    metrics = longterm_metrics([r for r in records if isinstance(r, ProbeRecord)])
    names = ["recall@1", "recall@5", "recall@10", "recall@20", "ndcg@10", "injected_tokens.mean"]
    print("\ncategory | questions | " + " | ".join(names))
    categories = ("multi-hop", "temporal", "open-domain", "single-hop", "adversarial")
    for suffix, label in [("", "all")] + [(f".cat_{c}", c) for c in categories]:
        cells = [f"{metrics[f'longterm.{n}{suffix}']:.3f}" for n in names]
        print(f"{label} | {metrics[f'longterm.questions{suffix}']:.0f} | " + " | ".join(cells))
    print(
        "memories:",
        sum(len(component.service.memories(_ctx(d.user_id))) for d in dialogues),
        dict(component.service.counts),
    )
    assert metrics["longterm.questions"] > 900  # every answerable question of the seven conversations
    assert metrics["longterm.recall@10"] > REFERENCE_RRF_RECALL_AT_10
    assert metrics["longterm.recall@10"] >= GOAL_RECALL_AT_10
    # Issue 24: depth is not bought with the head. BM25 over raw turns, same preprocessing, computed here.
    assert metrics["longterm.recall@1"] >= raw_turn_bm25_recall_at_1(dialogues) > 0.3


def raw_turn_bm25_recall_at_1(dialogues) -> float:
    """recall@1 of rank-bm25's BM25Okapi (k1 0.9, b 0.4) over ``speaker: text`` turns with memlab's `search_terms`
    (experiments/longterm_baselines.py's raw-turn baseline: 0.322 on dev7), over the questions memlab scores."""
    scores = []
    for d in dialogues:
        turns = [m for s in d.sessions for m in s.messages if m.id]
        index = BM25Okapi([search_terms(f"{m.name or m.role}: {m.text}") for m in turns], k1=0.9, b=0.4)
        for probe in d.probes:
            evidence = [e for e in probe.evidence if e]
            if str(probe.category) in EXCLUDED_CATEGORIES or not evidence:
                continue
            bm25 = np.asarray(index.get_scores(search_terms(probe.question)))
            first = turns[int(np.lexsort((np.arange(bm25.size), -bm25))[0])].id
            scores.append(recall_at_k(evidence, [[first]], 1))
    return float(np.mean(scores))


def _ctx(user: str):
    from .support import context

    return context(user=user, agent="chat")
