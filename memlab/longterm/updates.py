"""Which of two memories about the same thing is newer, decided from what they say, not from cue words.

A person revises what they said by saying the same kind of thing again with something else in it ("I
stayed put in my Bristol flat" -> weeks later "Finally signed the lease on the place in Leeds"). Often no
word says that it changed, and words that seem to ("again", "now") often revise nothing ("The Forester's
in the garage again, same rattle"). So `newer_first` reads three things, none of them a word list:

- *who*: the same speaker (the ``speaker:`` prefix that extraction and the memory tools write);
- *what*: a statement of the later memory is close in meaning to a statement of the retrieved one
  (cosine of the run's embedder between sentences, at least `UpdateSpec.similarity`; a sentence, not
  the whole turn, because a turn's chatter dilutes what it states);
- *when*: the later memory was saved later (session date, then save order).

At search time, for each of the top `depth` retrieved memories, the latest memory of its speaker that
says something close to it goes just above it (taking its score), unless it already ranks higher; the
older one stays (it is history; temporal questions ask about it). A later memory that only repeats the
earlier one (every content term of the close sentence is in the earlier one) is no revision.

A misfiring cue needs no guard of its own: no cue word counts. A later memory on the same subject that
revises nothing can still be read first (it is close and later); `experiments/update_eval.py`'s misfire
sets measure how often that puts it above the answer (docs/longterm.md, "Updated facts in natural wording").

Beyond the design document, whose only update rule is a PREFERENCE superseding a near-identical one: it
replaces memlab's cue-word rule (`UPDATE_CUE`), whose words the synthetic generator's templates share.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from memlab import ranges
from memlab.embed.base import Embedder
from memlab.longterm.model import Memory, Retrieved
from memlab.longterm.revision import speaker
from memlab.text import search_terms, split_sentences

UPDATE_KINDS = ("meaning", "llm", "none")


@dataclass
class UpdateSpec:
    """The update rule (`longterm.updates`): which one, and the meaning rule's knobs."""

    kind: str = "meaning"
    """meaning (this module), llm (save-time links decided by the run's LLM, `llm_updates`) or none."""
    similarity: float = ranges.ranged(0.5, ge=-1, le=1)
    """meaning: a later sentence this close (cosine) to one of a retrieved memory revises it."""
    depth: int = ranges.count(10)
    """meaning: the top this many retrieved memories are looked at."""


def statements(content: str) -> list[str]:
    """The sentences of a memory without its ``speaker:`` prefix (questions state nothing)."""
    who = speaker(content)
    body = content[len(who) + 1 :] if who else content
    return [s for s in split_sentences(body) if s.strip() and not s.rstrip().endswith(("?", "？"))]


class UpdateRule:
    """`newer_first` over one embedder, with each memory's statement vectors kept by content."""

    def __init__(self, spec: UpdateSpec, embedder: Embedder) -> None:
        if spec.kind not in UPDATE_KINDS:
            raise ValueError(f"longterm.updates.kind: {spec.kind!r}; expected one of {', '.join(UPDATE_KINDS)}")
        self.spec, self.embedder = spec, embedder

    def _vectors(self, content: str) -> np.ndarray:
        sentences = statements(content)
        return self.embedder.embed(sentences) if sentences else np.zeros((0, 1))

    def _closest(self, old: Memory, new: Memory) -> tuple[float, int]:
        """The best cosine between a statement of `new` and one of `old`, and which statement of `new`."""
        a, b = self._vectors(old.content), self._vectors(new.content)
        if not (len(a) and len(b)):
            return -1.0, -1
        sims = b @ a.T
        at = int(np.argmax(sims.max(axis=1)))
        return float(sims[at].max()), at

    def revises(self, new: Memory, old: Memory) -> bool:
        """`new`, saved after `old` by the same speaker in another turn, restates it with something else."""
        if not (_later(new, old) and speaker(new.content) == speaker(old.content)):
            return False
        if set(new.evidence) & set(old.evidence):
            return False  # two memories of one turn (the two channels save a statement twice)
        cosine, at = self._closest(old, new)
        if cosine < self.spec.similarity:
            return False
        return not set(search_terms(statements(new.content)[at])) <= set(search_terms(old.content))

    def newer_first(self, ranked: Sequence[Retrieved], memories: Iterable[Memory]) -> list[Retrieved]:
        """`ranked` with, just above each of its top `depth`, the latest memory revising it (`revises`)."""
        if self.spec.kind != "meaning" or not ranked:
            return list(ranked)
        by_speaker: dict[str, list[Memory]] = {}
        for m in memories:
            by_speaker.setdefault(speaker(m.content), []).append(m)
        out: list[Retrieved] = []
        placed: set[str] = set()
        for rank, hit in enumerate(ranked):
            if hit.memory.id in placed:
                continue
            if rank < self.spec.depth:
                later = sorted(
                    (m for m in by_speaker.get(speaker(hit.memory.content), ()) if self.revises(m, hit.memory)),
                    key=lambda m: (m.created_at, m.id),
                )
                newest = later[-1] if later else None
                if newest is not None and newest.id not in placed:
                    out.append(Retrieved(newest, hit.score, hit.similarity))
                    placed.add(newest.id)
            out.append(hit)
            placed.add(hit.memory.id)
        return out


def _later(new: Memory, old: Memory) -> bool:
    return new.created_at > old.created_at
