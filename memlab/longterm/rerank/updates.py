"""Stage `updates`: the latest memory that restates a retrieved one goes just above it (`memlab.longterm.updates`).

Decided from what the memories say (same speaker, a statement close in meaning by the run's embedder or
by all-MiniLM-L6-v2, saved later), not from cue words: see `memlab.longterm.updates`. Off: leave ``updates`` out of
``longterm.rerank``. Beyond the design document, whose only rule is PREFERENCE supersession: the old
memory stays (it is history, and may be asked about) but the current one is read first.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from memlab import ranges
from memlab.embed.minilm import check_rule_embedder
from memlab.longterm.model import Retrieved
from memlab.longterm.rerank.base import RankContext
from memlab.longterm.updates import (
    DEFAULT_DEPTH,
    DEFAULT_PRESENT_TENSE_ONLY,
    DEFAULT_RELEVANCE_SHARE,
    DEFAULT_SIMILARITY,
    asks_about_now,
    newer_first,
)


@dataclass
class Updates:
    """`longterm.stages.updates`: each retrieved memory's latest revision (by meaning) just above it."""

    _target_: str = field(default="memlab.longterm.rerank.Updates", repr=False)
    similarity: float = ranges.ranged(DEFAULT_SIMILARITY, ge=-1, le=1)
    """A later statement of the same speaker this close (cosine) to a retrieved memory's revises it."""
    depth: int = ranges.count(DEFAULT_DEPTH)
    """The top this many retrieved memories are looked at."""
    relevance_share: float = ranges.ranged(DEFAULT_RELEVANCE_SHARE, ge=0)
    """The later memory scores at least this share of the one it revises (it bears on the question too)."""
    present_tense_only: bool = DEFAULT_PRESENT_TENSE_ONLY
    """Only questions about what holds now (first auxiliary present tense: "Where does Maya work?") are reordered."""
    question_share: float | None = ranges.ranged(None, ge=0)
    """The later memory's closest statement is at least this share as close to the question (cosine) as the
    older memory's (null: no such test)."""
    embedder: str = "run"
    """Whose cosine compares statements: run (the run's embedder) or minilm (all-MiniLM-L6-v2, loaded at the first
    question that needs it, one torch thread; needs memlab[minilm]); each statement is embedded once per namespace,
    for this stage and the links by meaning alike (`memlab.longterm.statement_vectors`)."""
    name: ClassVar[str] = "updates"

    def __post_init__(self) -> None:
        check_rule_embedder("longterm.stages.updates.embedder", self.embedder)

    def __call__(self, query: str, ranked: list[Retrieved], context: RankContext) -> list[Retrieved]:
        if self.present_tense_only and not asks_about_now(query):
            return ranked
        vectors = context.vectors(self.embedder)
        memories = context.memories.values()
        return newer_first(
            ranked,
            memories,
            vectors,
            self.similarity,
            self.depth,
            context.asked,
            self.relevance_share,
            question=query,
            question_share=self.question_share,
        )
