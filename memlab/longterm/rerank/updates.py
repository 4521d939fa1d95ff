"""Stage `updates`: a newer memory that states an update goes just above the older one it revises.

Revises: the newer memory's update sentences (those with an update cue: "now", "these days",
"switched", "no longer", ... `UPDATE_CUE`) share a term with the question (its search terms) and have
cosine >= `similarity` with an older memory of the same speaker ranked above it, and the newer one
scores at least `relevance_share` of the older one. As for the save-time links (stage `revisions`): a
person revises their own statements, and the question must bear on the update sentence, not on the
chatter of its turn (LoCoMo's "now" and "again" are rarely revisions). The cue sentences, not the
whole memory, are compared: an extracted memory is a whole turn, and the chatter around an update
would dilute its similarity to what it revises. Types are not compared: they are read per turn, so a
fix "I fixed it by ..." (PROCEDURE) revises "it is green again after ..." (FACT). Beyond the design
document, whose only rule is PREFERENCE supersession: the old memory stays (it is history, and may be
asked about) but the current one is read first.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import ClassVar

from memlab import ranges
from memlab.longterm.model import Retrieved
from memlab.longterm.rerank.base import RankContext
from memlab.longterm.revision import speaker
from memlab.text import search_terms, split_sentences

# A memory that says it revises an earlier one.
UPDATE_CUE = re.compile(
    r"\b(now|these days|nowadays|any ?more|no longer|switched|changed|moved|relocated|instead|from now on|again|"
    r"this time|update[ds]?|scratch)\b|现在|改成|不再|换了",
    re.I,
)


def update_sentences(text: str) -> str:
    """The sentences of `text` that say they revise something (`UPDATE_CUE`), joined; "" if none."""
    return " ".join(s for s in split_sentences(text) if UPDATE_CUE.search(s))


@dataclass
class Updates:
    """`longterm.stages.updates`: each update goes just above the best-ranked older memory it revises."""

    _target_: str = field(default="memlab.longterm.rerank.Updates", repr=False)
    similarity: float = ranges.ranged(0.2, ge=-1, le=1)
    """Cosine between the update sentences and the older memory at least this."""
    relevance_share: float = ranges.ranged(0.3, ge=0)
    """... and the newer one scores at least this share of the older one."""
    name: ClassVar[str] = "updates"

    def __call__(self, query: str, ranked: list[Retrieved], context: RankContext) -> list[Retrieved]:
        if len(ranked) < 2:
            return ranked
        cues = [update_sentences(h.memory.content) for h in ranked]
        revising = [j for j, cue in enumerate(cues) if cue and not context.asked.isdisjoint(search_terms(cue))]
        if not revising:
            return ranked
        vectors = context.embedder.embed([h.memory.content for h in ranked])
        order = list(range(len(ranked)))
        for j, cue_vector in zip(revising, context.embedder.embed([cues[j] for j in revising]), strict=True):
            newer = ranked[j]
            at = order.index(j)
            target = next(
                (
                    i
                    for i in order[:at]
                    if ranked[i].memory.created_at < newer.memory.created_at
                    and speaker(ranked[i].memory.content) == speaker(newer.memory.content)
                    and newer.score >= self.relevance_share * ranked[i].score
                    and float(vectors[i] @ cue_vector) >= self.similarity
                ),
                None,
            )
            if target is not None:
                order.remove(j)
                order.insert(order.index(target), j)
        return [ranked[i] for i in order]
