"""How well an embedder retrieves: LoCoMo questions against the turns of their own conversation.

Each question with evidence (categories 1-4; category 5 is adversarial and has none) ranks
every turn of its conversation by cosine similarity; hit@k is the share of questions with an
evidence turn in the top k (a hit rate, LongMemEval's recall_any@k; not the fractional
``longterm.recall@k``), MRR the mean reciprocal rank of the first one.
`python experiments/embed_retrieval.py` prints the figures for each embedder.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np

from memlab.embed.base import Embedder

ADVERSARIAL_CATEGORY = 5
HIT_AT = (1, 5, 10)


def turn_text(turn: dict) -> str:
    """A LoCoMo turn as the text a memory would hold: ``speaker: text``."""
    return f"{turn['speaker']}: {turn['text']}"


def locomo_conversations(path: Path) -> Iterator[tuple[list[str], list[str], list[tuple[str, set[str]]]]]:
    """(turn ids, turn texts, [(question, evidence ids)]) per LoCoMo conversation."""
    for sample in json.loads(Path(path).read_text(encoding="utf-8")):
        turns = [
            t
            for key, v in sample["conversation"].items()
            if key.startswith("session_") and isinstance(v, list)
            for t in v
        ]
        questions = [
            (q["question"], set(q["evidence"]))
            for q in sample["qa"]
            if q.get("evidence") and q.get("category") != ADVERSARIAL_CATEGORY
        ]
        yield [t["dia_id"] for t in turns], [turn_text(t) for t in turns], questions


def evidence_ranks(
    embedder: Embedder, ids: list[str], texts: list[str], questions: list[tuple[str, set[str]]]
) -> list[int]:
    """The 0-based rank of the best-ranked evidence turn of each question (questions without one are left out)."""
    turns, queries = embedder.embed(texts), embedder.embed([q for q, _ in questions])
    ranks = []
    for (_, evidence), row in zip(questions, queries @ turns.T, strict=True):
        order = np.argsort(-row, kind="stable")
        hits = [r for r, j in enumerate(order) if ids[j] in evidence]
        if hits:
            ranks.append(hits[0])
    return ranks


def evaluate_locomo(path: Path, make_embedder: Callable[[], Embedder]) -> dict[str, float]:
    """hit@1/5/10 and MRR over all conversations, a fresh embedder per conversation."""
    ranks = [
        r for ids, texts, qs in locomo_conversations(path) for r in evidence_ranks(make_embedder(), ids, texts, qs)
    ]
    out = {f"hit@{k}": sum(r < k for r in ranks) / len(ranks) for k in HIT_AT}
    return {"questions": len(ranks), **out, "mrr": sum(1 / (1 + r) for r in ranks) / len(ranks)}
