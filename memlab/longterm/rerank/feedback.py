"""Stage `feedback`: pseudo-relevance feedback, the query asked again with the terms its best hits stress.

RM3-style query expansion (Lavrenko and Croft's relevance model as Anserini applies it): the top `docs`
BM25 results add their `terms` most distinctive terms (idf x tf / length, `Bm25Index.feedback`) to the
query at weight `weight`, and the hybrid index searches again with the expanded query. Expansion finds
evidence that shares few words with the question (recall), and moves aside what matched the question
best (precision at the top): the first `head` hits of the unexpanded ranking stay first, the expanded
ranking fills the rest (its scores scaled, when needed, to stay below the head's last: the stages
after sort by score), the practice of keeping the head of the original run (docs/longterm.md measures
both). The index must be the hybrid (its BM25 side); with a dense-only index the stage passes
the ranking through. Off by default; `longterm=locomo` turns it on with the values chosen on LoCoMo dev7.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field
from typing import ClassVar

from memlab import ranges
from memlab.longterm.index import HybridIndex, top_positions
from memlab.longterm.model import Retrieved
from memlab.longterm.rerank.base import RankContext
from memlab.text import search_terms


@dataclass
class Feedback:
    """`longterm.stages.feedback`: the query expanded by its top BM25 results, searched again; the head kept."""

    _target_: str = field(default="memlab.longterm.rerank.Feedback", repr=False)
    docs: int = ranges.ranged(3, ge=1)
    """The top this many BM25 results are read."""
    terms: int = ranges.ranged(5, ge=1)
    """Their most distinctive terms added to the query."""
    weight: float = ranges.ranged(0.3, ge=0)
    """The added terms' weight (the question's own terms weigh 1)."""
    head: int = ranges.count(0)
    """The first this many hits of the unexpanded ranking stay first (0: the expanded ranking alone)."""
    name: ClassVar[str] = "feedback"

    def __call__(self, query: str, ranked: list[Retrieved], context: RankContext) -> list[Retrieved]:
        index = context.index
        if not isinstance(index, HybridIndex) or not ranked:
            return ranked
        asked = dict(Counter(search_terms(query)))
        scores = index.bm25.scores(asked)
        top = top_positions(scores, self.docs)
        top = top[scores[top] > 0]
        if top.size == 0:
            return ranked
        expanded = index.bm25.feedback(asked, top, self.terms, self.weight)
        found = index.search(context.query_vector, query, len(ranked), terms=expanded)
        head = ranked[: self.head]
        kept = {hit.memory.id for hit in head}
        rest = [(context.memories[pos], relevance, similarity) for pos, relevance, similarity in found]
        rest = [r for r in rest if r[0].id not in kept]
        scale = 1.0
        if head and rest and rest[0][1] >= head[-1].score:  # stages after sort by score: the head stays first
            scale = math.nextafter(head[-1].score, 0.0) / rest[0][1]
        return head + [Retrieved(memory, relevance * scale, similarity) for memory, relevance, similarity in rest]
