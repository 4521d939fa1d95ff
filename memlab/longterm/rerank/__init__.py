"""Long-term ranking after the index, as a pipeline of named stages (`longterm.rerank`, `longterm.stages`).

`longterm.rerank` lists the stages that run, in order (default: decay, revisions, dedup; `feedback` and
`updates` are off; `longterm=locomo` runs feedback first);
`longterm.stages.<name>` holds each one's knobs. Turning a stage off is one override, e.g.
``longterm.rerank=[decay,dedup]`` (and a sweep over pipelines: ``longterm.rerank=[decay,dedup],[decay,updates,dedup]``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from hydra.utils import instantiate
from omegaconf import DictConfig

from memlab.errors import MemlabError
from memlab.longterm.rerank.base import RankContext, Stage, StageTrace, rank
from memlab.longterm.rerank.decay import Decay, decayed_score, prior
from memlab.longterm.rerank.dedup import Dedup
from memlab.longterm.rerank.feedback import Feedback
from memlab.longterm.rerank.revisions import Revisions
from memlab.longterm.rerank.updates import Updates

# `updates` (the update rule by meaning) is off by default: with its first knobs it cost LoCoMo dev7 recall@1
# 0.241 -> 0.138; with today's -0.003, but datasets/updates' dev newer@1 is 26% (not the 60% bar) and a misfire
# decoy goes above the answer once more (docs/longterm.md, "Second pass").
# On: longterm.rerank=[decay,updates,revisions,dedup].
DEFAULT_PIPELINE = ("decay", "revisions", "dedup")


@dataclass
class RerankStages:
    """`longterm.stages`: every stage's knobs, by name (`longterm.rerank` picks which run, in which order)."""

    feedback: Feedback = field(default_factory=Feedback)
    """Pseudo-relevance feedback: the query expanded and asked again (memlab.longterm.rerank.feedback)."""
    decay: Decay = field(default_factory=Decay)
    """The lifecycle prior (memlab.longterm.rerank.decay)."""
    updates: Updates = field(default_factory=Updates)
    """A stated update above what it revises (memlab.longterm.rerank.updates)."""
    revisions: Revisions = field(default_factory=Revisions)
    """Save-time revision links read at search (memlab.longterm.rerank.revisions)."""
    dedup: Dedup = field(default_factory=Dedup)
    """No two copies of one statement (memlab.longterm.rerank.dedup)."""


def build_pipeline(names: Sequence[str], stages: RerankStages | DictConfig | None = None) -> list[Stage]:
    """The stages `names` lists, in order, each built from its entry of `stages` (default knobs without one).

    Args:
        names: Stage names (`longterm.rerank`), in the order they run.
        stages: Each stage's knobs (`longterm.stages`); None: every stage's defaults.

    Returns:
        The built stages; a `MemlabError` names an unknown stage.
    """
    stages = stages if stages is not None else RerankStages()
    known = [f.name for f in RerankStages.__dataclass_fields__.values()]
    out = []
    for name in names:
        if name not in known:
            raise MemlabError(f"longterm.rerank: unknown stage {name!r}; expected some of {', '.join(known)}")
        entry = stages[name] if isinstance(stages, DictConfig) else getattr(stages, name)
        out.append(instantiate(entry) if isinstance(entry, DictConfig) else entry)
    return out


__all__ = [
    "DEFAULT_PIPELINE",
    "Decay",
    "Dedup",
    "Feedback",
    "RankContext",
    "RerankStages",
    "Revisions",
    "Stage",
    "StageTrace",
    "Updates",
    "build_pipeline",
    "decayed_score",
    "prior",
    "rank",
]
