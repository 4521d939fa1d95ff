"""Stage `revisions`: just above each retrieved memory, the memories saved as revising it.

The links are made at save time (`memlab.longterm.revision`, knobs `longterm.revision.*`). A reviser
need not share a word with the question ("We just moved, so I live in Krakow now" for "Which city am I
based in?"): it is read first because what it revises was retrieved, and takes the score of the
memory it revises (its place in the ranking). The older memory stays: it is history, and temporal
questions ask about it. Of the revisers, only those whose revising sentences (the new one or the one
it revises) share a term with the question count, most shared terms first, then the newest: a memory
is a whole turn, and the question must bear on the revised statement, not on the chatter around it; a
question that names the old value ("Did I live in Lisbon?") asks about the old statement, so its
revision is not put first.

With links by meaning (`longterm.revision.kind=meaning`, `memlab.longterm.revision_meaning`) no sentence pair names
shared terms: a reviser counts when its closest statement to the question (the linker's embedder, cosine) is at
least `question_share` of the older memory's, and the question names no value only the older one states; the
newest such reviser goes first. Only the top `depth` memories pull their revisers (links by meaning are many).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np

from memlab import ranges
from memlab.longterm.model import Memory, Retrieved
from memlab.longterm.rerank.base import RankContext
from memlab.longterm.revision import revising_pairs
from memlab.longterm.revision_meaning import MeaningLinks
from memlab.longterm.updates import asks_about
from memlab.text import search_terms


@dataclass
class Revisions:
    """`longterm.stages.revisions`: the newest `pull` revisers of a retrieved memory go just above it."""

    _target_: str = field(default="memlab.longterm.rerank.Revisions", repr=False)
    pull: int = ranges.count(2)
    """The newest this many revisers of a retrieved memory go just above it (0: none)."""
    depth: int | None = ranges.ranged(None, ge=0)
    """Only the top this many retrieved memories pull their revisers (null: every one)."""
    question_share: float = ranges.ranged(1.0, ge=0)
    """Links by meaning: a reviser's closest statement is at least this share as close to the question (cosine)
    as the revised memory's (a later remark on the subject is further from the question than the answer)."""
    name: ClassVar[str] = "revisions"

    def __call__(self, query: str, ranked: list[Retrieved], context: RankContext) -> list[Retrieved]:
        if not context.revisers or self.pull == 0:
            return ranked
        by_id = {h.memory.id: h for h in ranked}
        links = context.links
        asked = links.sentence_vectors(context.vectors).embedder.embed([query])[0] if links is not None else None
        out: list[Retrieved] = []
        placed: set[str] = set()
        for rank, hit in enumerate(ranked):
            if hit.memory.id in placed:
                continue
            pulling = self.depth is None or rank < self.depth
            for mid in self.revisers(hit.memory, context, asked) if pulling else ():
                if mid in placed:
                    continue
                found = by_id.get(mid)
                if found is None:
                    memory = context.memory(mid)
                    similarity = float(context.embedder.embed([memory.content])[0] @ context.query_vector)
                else:
                    memory, similarity = found.memory, found.similarity
                out.append(Retrieved(memory, hit.score, similarity))
                placed.add(mid)
            out.append(hit)
            placed.add(hit.memory.id)
        return out

    def revisers(self, old: Memory, context: RankContext, asked: np.ndarray | None = None) -> list[str]:
        """The ids of the memories revising `old` that bear on the question, best first, at most `pull`
        (`asked`: the question's vector by the linker's embedder, with links by meaning)."""
        if context.links is not None and asked is not None:
            return self._by_meaning(old, context, context.links, asked)
        scored = []
        for mid in context.revisers.get(old.id, ()):
            new = context.memory(mid).content
            if context.revision_rule.kind == "llm":  # a model's link names no sentence: both memories bear on it
                overlap = len(context.asked & set(search_terms(f"{new} {old.content}")))
            else:
                pairs = revising_pairs(new, old.content, context.revision_rule)
                overlap = max(
                    (len(context.asked & (a | b)) for a, b, dropped in pairs if context.asked.isdisjoint(dropped)),
                    default=0,
                )
            if overlap:
                scored.append((-overlap, -context.positions[mid], mid))
        return [mid for *_, mid in sorted(scored)[: self.pull]]

    def _by_meaning(self, old: Memory, context: RankContext, links: MeaningLinks, asked: np.ndarray) -> list[str]:
        """The newest revisers of `old` at least `question_share` as close to the question, at most `pull`."""
        vectors = links.sentence_vectors(context.vectors)
        bar = self.question_share * links.question_closeness(old, asked, vectors)
        found = []
        for mid in context.revisers.get(old.id, ()):
            new = context.memory(mid)
            if links.question_closeness(new, asked, vectors) >= bar and not asks_about(old, new, context.asked):
                found.append((-context.positions[mid], mid))
        return [mid for _, mid in sorted(found)[: self.pull]]
