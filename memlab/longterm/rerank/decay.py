"""Stage `decay`: the lifecycle prior (type weight x decay) scales relevance and breaks its ties.

The design document's decay, ``relevance_score * decay_factor ** days_since_access``, computed when
needed (`decayed_score`). Score = relevance x prior ** `prior_weight`; equal scores go to the higher
prior (the newer or more stable memory), then to the older index position. With the default 0 the
prior only breaks ties: decay archives and orders equals, it never buries a relevant memory under a
fresher, less relevant one (docs/longterm.md measures `prior_weight=1`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import ClassVar

from memlab import ranges
from memlab.longterm.model import Memory, Retrieved, TypePolicy, naive_utc
from memlab.longterm.rerank.base import RankContext


def decayed_score(memory: Memory, now: datetime, policy: TypePolicy) -> float:
    """``relevance_score * decay_factor ** days_since_access`` (no decay before the last access).

    Args:
        memory: The memory, with its stored score and last access.
        now: The caller's clock.
        policy: Its type's policy (the daily decay factor).

    Returns:
        The decayed score, computed when needed rather than stored daily.
    """
    days = max((naive_utc(now) - memory.last_accessed_at).total_seconds() / 86400.0, 0.0)
    return float(memory.relevance_score * policy.decay_factor**days)


def prior(memory: Memory, now: datetime, policy: TypePolicy) -> float:
    """The lifecycle prior: the type's weight x `decayed_score` (what stage `decay` weighs relevance by, and
    what the max-items cap archives the lowest of)."""
    return policy.weight * decayed_score(memory, now, policy)


@dataclass
class Decay:
    """`longterm.stages.decay`: score = relevance x (type weight x decay) ** prior_weight, re-sorted."""

    _target_: str = field(default="memlab.longterm.rerank.Decay", repr=False)
    prior_weight: float = ranges.ranged(0.0, ge=0)
    """score = relevance x (type weight x decay) ** prior_weight (0: the prior only breaks ties)."""
    name: ClassVar[str] = "decay"

    def __call__(self, query: str, ranked: list[Retrieved], context: RankContext) -> list[Retrieved]:
        scored = []
        for hit in ranked:
            weight = prior(hit.memory, context.now, context.types[hit.memory.type])
            score = hit.score * weight**self.prior_weight
            key = (-score, -weight, context.positions[hit.memory.id])
            scored.append((key, Retrieved(hit.memory, score, hit.similarity)))
        return [hit for _, hit in sorted(scored, key=lambda s: s[0])]
