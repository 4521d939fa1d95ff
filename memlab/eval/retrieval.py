"""How well an embedder retrieves: LoCoMo questions against the turns of their own conversation.

Each question with evidence (all but the adversarial category, which has none to find) ranks every
turn of its conversation by cosine similarity; hit@k is the share of questions with an evidence
turn in the top k (a hit rate, LongMemEval's recall_any@k; not the fractional ``longterm.recall@k``),
MRR the mean reciprocal rank of the first one. Turns and evidence ids are those
`memlab.dialogues.load_locomo` yields (image captions appended, evidence lists split and validated).
`python experiments/embed_retrieval.py` prints the figures for each embedder.

>>> {k: round(v, 3) for k, v in hit_rates([0, 3, 12]).items()}
{'questions': 3, 'hit@1': 0.333, 'hit@5': 0.667, 'hit@10': 0.667, 'mrr': 0.442}
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass

import numpy as np

from memlab.dialogues import Dialogue
from memlab.dialogues.locomo import ADVERSARIAL
from memlab.embed import Embedder

HIT_AT = (1, 5, 10)


@dataclass(frozen=True)
class RetrievalCase:
    """One conversation's turns (ids and ``speaker: text``) and its questions with their evidence ids.

    Args:
        ids: The conversation's turn ids.
        texts: Each turn as ``speaker: text``, aligned with `ids`.
        questions: Each question with the set of its evidence turn ids.
    """

    ids: tuple[str, ...]
    texts: tuple[str, ...]
    questions: tuple[tuple[str, frozenset[str]], ...]


def retrieval_cases(dialogues: Iterable[Dialogue]) -> Iterator[RetrievalCase]:
    """A `RetrievalCase` per dialogue: every turn with an id, every non-adversarial question with evidence.

    Args:
        dialogues: Dialogues with probes that cite evidence.
    """
    for dialogue in dialogues:
        turns = [m for m in dialogue.messages() if m.id is not None]
        questions = tuple(
            (p.question, frozenset(p.evidence)) for p in dialogue.probes if p.evidence and p.category != ADVERSARIAL
        )
        ids = tuple(str(m.id) for m in turns)
        yield RetrievalCase(ids, tuple(f"{m.speaker or m.name or m.role}: {m.text}" for m in turns), questions)


def evidence_ranks(embedder: Embedder, case: RetrievalCase) -> list[int]:
    """The 0-based rank of the best-ranked evidence turn of each question (questions without one are left out).

    Args:
        embedder: Embeds the turns and the questions.
        case: One conversation's turns and questions.
    """
    turns, queries = embedder.embed(list(case.texts)), embedder.embed([q for q, _ in case.questions])
    ranks = []
    for (_, evidence), row in zip(case.questions, queries @ turns.T, strict=True):
        order = np.argsort(-row, kind="stable")
        hits = [r for r, j in enumerate(order) if case.ids[j] in evidence]
        if hits:
            ranks.append(hits[0])
    return ranks


def hit_rates(ranks: Sequence[int]) -> dict[str, float]:
    """hit@1/5/10 and MRR of 0-based first-evidence ranks, with the number of questions.

    Args:
        ranks: The 0-based rank of each question's first evidence turn.
    """
    out = {f"hit@{k}": sum(r < k for r in ranks) / len(ranks) for k in HIT_AT}
    return {"questions": len(ranks), **out, "mrr": sum(1 / (1 + r) for r in ranks) / len(ranks)}


def evaluate_retrieval(dialogues: Iterable[Dialogue], make_embedder: Callable[[], Embedder]) -> dict[str, float]:
    """`hit_rates` over all conversations, a fresh embedder per conversation.

    Args:
        dialogues: Dialogues with probes that cite evidence.
        make_embedder: Makes a fresh embedder for each conversation.
    """
    return hit_rates([r for case in retrieval_cases(dialogues) for r in evidence_ranks(make_embedder(), case)])
