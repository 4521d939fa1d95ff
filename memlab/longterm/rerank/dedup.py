"""Stage `dedup`: the first k hits that say something the earlier ones do not.

A hit that repeats an earlier one (`repeats`: of the same turn, and using only words the other uses)
is left out; one that the earlier one repeats takes its place (and score: it says all that one says).
Beyond the design document: its two channels save the same statement twice by design (a tool save of
one sentence during the call, then auto-extraction of the whole turn, which does not deduplicate), and
two copies would spend two of the k places.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import ClassVar

from memlab.longterm.model import Memory, Retrieved
from memlab.longterm.rerank.base import RankContext
from memlab.text import word_key


@functools.lru_cache(maxsize=1 << 16)
def word_set(text: str) -> frozenset[str]:
    """The distinct words of `memlab.text.word_key(text)`."""
    return frozenset(word_key(text).split())


def repeats(a: Memory, b: Memory) -> bool:
    """One of two memories of the same turn (a shared evidence id) uses only words the other uses."""
    if not set(a.evidence) & set(b.evidence):
        return False
    wa, wb = word_set(a.content), word_set(b.content)
    return bool(wa and wb) and (wa <= wb or wb <= wa)


@dataclass
class Dedup:
    """`longterm.stages.dedup`: leave out hits that repeat a better-ranked one (no knobs)."""

    _target_: str = field(default="memlab.longterm.rerank.Dedup", repr=False)
    name: ClassVar[str] = "dedup"

    def __call__(self, query: str, ranked: list[Retrieved], context: RankContext) -> list[Retrieved]:
        kept: list[Retrieved] = []
        for hit in ranked:
            same = next((i for i, other in enumerate(kept) if repeats(hit.memory, other.memory)), None)
            if same is None:
                kept.append(hit)
            elif len(word_set(hit.memory.content)) > len(word_set(kept[same].memory.content)):
                kept[same] = Retrieved(hit.memory, kept[same].score, kept[same].similarity)
            if len(kept) == context.k:
                break
        return kept
