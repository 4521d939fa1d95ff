"""The re-ranking pipeline's shape: a `Stage` reorders the index's candidates, `rank` runs them in turn.

After the index (BM25, dense and their fusion: `memlab.longterm.index`) each rule is a stage
with a name, its own module and its own knobs, listed in `longterm.rerank` (llama_index's node
postprocessors have this shape). A stage reads the ranking and what `RankContext` holds, never
the store; it returns a new list. `rank` can keep each stage's input and output (`StageTrace`), so
a run records which stage moved which memory where.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

import numpy as np

from memlab.embed.base import Embedder
from memlab.longterm.index import MemoryIndex
from memlab.longterm.model import Memory, MemoryType, Retrieved, TypePolicy
from memlab.longterm.revision import RevisionRule
from memlab.longterm.revision_meaning import MeaningLinks
from memlab.longterm.statement_vectors import RuleVectors


@dataclass(frozen=True)
class RankContext:
    """What a stage may read besides the ranking: the query, the clock and the namespace's index state.

    Attributes:
        asked: The query's search terms.
        query_vector: The query's embedding, for stages that compare memories with it.
        k: How many hits the caller keeps.
        now: The caller's clock (the simulator's), for decay and expiry.
        embedder: The service's embedder, for stages that embed memories.
        types: Each type's weight, decay and expiry.
        positions: Memory id -> index position (the older memory has the lower one).
        memories: Index position -> memory.
        revisers: Memory id -> ids of the memories saved as revising it.
        revision_rule: The save-time rule that made those links.
        index: The namespace's index, for a stage that asks it again (`feedback`).
        vectors: The namespace's statement vectors, per rule embedder, for the stages that compare statements by
            meaning (`updates`, `revisions` with links by meaning); the links by meaning filed them at save time.
        links: The save-time linker by meaning (`revision.kind=meaning`), whose statements stage `revisions`
            compares with the question; None with the other kinds.
    """

    asked: frozenset[str]  # the query's search terms
    query_vector: np.ndarray
    k: int  # how many hits the caller keeps
    now: datetime
    embedder: Embedder
    types: Mapping[MemoryType, TypePolicy]
    positions: Mapping[str, int]  # memory id -> index position (the older memory has the lower one)
    memories: Mapping[int, Memory]  # index position -> memory
    revisers: Mapping[str, set[str]]  # memory id -> ids of the memories saved as revising it
    revision_rule: RevisionRule  # the save-time rule that made those links
    index: MemoryIndex  # the namespace's index, for a stage that asks it again (`feedback`)
    vectors: RuleVectors  # the namespace's statement vectors, per rule embedder (run or minilm)
    links: MeaningLinks | None = None  # the save-time linker by meaning, for stage `revisions`

    def memory(self, memory_id: str) -> Memory:
        """The indexed memory with id `memory_id`."""
        return self.memories[self.positions[memory_id]]


class Stage(Protocol):
    """One named re-ranking rule: ``ranked`` (best first) in, a reordered (or shortened, or extended) list out."""

    name: str

    def __call__(self, query: str, ranked: list[Retrieved], context: RankContext) -> list[Retrieved]: ...


@dataclass(frozen=True)
class StageTrace:
    """One stage's input and output ranking (references to the hits, no copies)."""

    stage: str
    before: tuple[Retrieved, ...]
    after: tuple[Retrieved, ...]


def rank(
    stages: Sequence[Stage], query: str, ranked: list[Retrieved], context: RankContext, *, trace: bool = False
) -> tuple[list[Retrieved], list[StageTrace]]:
    """`ranked` through each stage in order, cut to `context.k`; with `trace`, each stage's before and after."""
    traces = []
    for stage in stages:
        out = stage(query, ranked, context)
        if trace:
            traces.append(StageTrace(stage.name, tuple(ranked), tuple(out)))
        ranked = out
    return ranked[: context.k], traces
