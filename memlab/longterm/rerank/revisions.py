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
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from memlab import ranges
from memlab.longterm.model import Memory, Retrieved
from memlab.longterm.rerank.base import RankContext
from memlab.longterm.revision import revising_pairs


@dataclass
class Revisions:
    """`longterm.stages.revisions`: the newest `pull` revisers of a retrieved memory go just above it."""

    _target_: str = field(default="memlab.longterm.rerank.Revisions", repr=False)
    pull: int = ranges.count(2)
    """The newest this many revisers of a retrieved memory go just above it (0: none)."""
    name: ClassVar[str] = "revisions"

    def __call__(self, query: str, ranked: list[Retrieved], context: RankContext) -> list[Retrieved]:
        if not context.revisers or self.pull == 0:
            return ranked
        by_id = {h.memory.id: h for h in ranked}
        out: list[Retrieved] = []
        placed: set[str] = set()
        for hit in ranked:
            if hit.memory.id in placed:
                continue
            for mid in self.revisers(hit.memory, context):
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

    def revisers(self, old: Memory, context: RankContext) -> list[str]:
        """The ids of the memories revising `old` that bear on the question, best first, at most `pull`."""
        scored = []
        for mid in context.revisers.get(old.id, ()):
            pairs = revising_pairs(context.memory(mid).content, old.content, context.revision_rule)
            overlap = max(
                (len(context.asked & (a | b)) for a, b, dropped in pairs if context.asked.isdisjoint(dropped)),
                default=0,
            )
            if overlap:
                scored.append((-overlap, -context.positions[mid], mid))
        return [mid for *_, mid in sorted(scored)[: self.pull]]
