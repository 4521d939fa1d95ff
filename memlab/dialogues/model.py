"""The `Dialogue` every loader returns: sessions of messages, probe questions, metadata."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

from memlab.messages import Message

# `Probe.metadata` keys naming the turns a probe's evidence relates to (memlab.metrics.longterm reads them):
SUPERSEDED_KEY = "superseded"  # older statements the evidence revises (synthetic UPDATE; LoCoMo-format files)
DECOYS_KEY = "decoys"  # later turns that sound like a revision of the evidence but revise nothing
EVIDENCE_SESSIONS_KEY = "evidence_sessions"  # the sessions holding its answer (LongMemEval)
# Evidence ids the loader dropped (malformed, or naming no turn), each (its place in the file, as written): LoCoMo
DROPPED_EVIDENCE_KEY = "dropped_evidence"
# Why a dataset gives each dialogue id once: each loader says so at the place an id repeats, and
# `memlab.experiment.load_dialogues` for any other dataset.
UNIQUE_DIALOGUE_IDS = "dialogue ids are unique: each names its own history in the store"


@dataclass(frozen=True)
class Session:
    """One sitting of a conversation; `started_at` is the source's session time, if any.

    Args:
        id: Unique within the dialogue.
        messages: Its messages, in order.
        started_at: The source's session time (None: none).
    """

    id: str
    messages: tuple[Message, ...]
    started_at: datetime | None = None


@dataclass(frozen=True)
class Probe:
    """A question asked after the dialogue, with the ids of the turns that hold its answer.

    `category` follows the source (LoCoMo: 1 multi-hop, 2 temporal, 3 open-domain,
    4 single-hop, 5 adversarial; synthetic: the planted memory type, or UPDATE). `metadata` holds
    what the source adds beyond that (a LoCoMo adversarial answer, `SUPERSEDED_KEY`, `DECOYS_KEY`,
    `EVIDENCE_SESSIONS_KEY`). `asked_at` is when the question is asked, if the source says (LongMemEval's
    ``question_date``): the replay's clock moves there before the probe, so decay counts up to that moment.

    Args:
        id: Unique within the dialogue.
        question: The question asked.
        answer: The gold answer (None: none, e.g. adversarial).
        evidence: The ids of the turns that hold the answer.
        category: The question's category (metrics are also reported per category).
        metadata: Whatever else the source says (e.g. superseded evidence of an updated fact).
        asked_at: When it is asked, if the source says (None: the replay's clock stays where the dialogue ended).
    """

    id: str
    question: str
    answer: str | None
    evidence: tuple[str, ...]
    category: str
    metadata: dict[str, Any] = field(default_factory=dict, compare=False)
    asked_at: datetime | None = None


@dataclass(frozen=True)
class Dialogue:
    """A whole conversation or agent trajectory, as replayed by the simulator.

    Args:
        id: Unique within the dataset.
        sessions: Its sittings, in order.
        probes: The questions asked after it.
        system_prompt: The agent's instructions from the source (None: the run's `system_prompt`).
        user_id: Whose conversation it is (long-term memory is kept per user).
        metadata: Whatever else the source says about it (not replayed).
    """

    id: str
    sessions: tuple[Session, ...]
    probes: tuple[Probe, ...] = ()
    system_prompt: str | None = None
    user_id: str = "user"
    metadata: dict[str, Any] = field(default_factory=dict, compare=False)

    def messages(self) -> Iterator[Message]:
        for s in self.sessions:
            yield from s.messages

    def message_ids(self) -> set[str]:
        return {m.id for m in self.messages() if m.id is not None}

    def __len__(self) -> int:
        return sum(len(s.messages) for s in self.sessions)

    def head(self, sessions: int) -> Dialogue:
        """The first `sessions` sessions, with the probes whose evidence lies in them (a debug slice)."""
        if sessions >= len(self.sessions):
            return self
        kept = Dialogue(self.id, self.sessions[:sessions], (), self.system_prompt, self.user_id, self.metadata)
        ids = kept.message_ids()
        probes = tuple(p for p in self.probes if set(p.evidence) <= ids)
        return replace(kept, probes=probes)


_PLACES_SHOWN = 3  # places a dropped-evidence warning names


def dropped_evidence(dialogues: Iterable[Dialogue]) -> tuple[int, str | None]:
    """The evidence ids a loader dropped from these dialogues' probes (`DROPPED_EVIDENCE_KEY`), and the warning a run
    gives for them: how many, from how many questions, and the first places (None: none was dropped).

    >>> dropped = (("[0].qa[0].evidence[0]", "D:1"),)
    >>> probe = Probe("c:q0", "Where?", None, (), "temporal", {DROPPED_EVIDENCE_KEY: dropped})
    >>> count, warning = dropped_evidence([Dialogue("c", (), (probe,))])
    >>> count, warning.split(": ")[1]
    (1, "[0].qa[0].evidence[0] 'D:1' (docs/datasets.md, Untidiness handled and counted)")
    """
    probes = [p for d in dialogues for p in d.probes if p.metadata.get(DROPPED_EVIDENCE_KEY)]
    places = [f"{place} {value!r}" for p in probes for place, value in p.metadata[DROPPED_EVIDENCE_KEY]]
    if not places:
        return 0, None
    ids, questions = len(places), len(probes)
    emptied = sum(not p.evidence for p in probes)
    shown = ", ".join(places[:_PLACES_SHOWN]) + (", ..." if ids > _PLACES_SHOWN else "")
    return ids, (
        f"the dataset's evidence lists hold {ids} id{'s' * (ids > 1)} that name{'s' * (ids == 1)} no turn, dropped "
        f"from {questions} question{'s' * (questions > 1)} ({emptied} left with no evidence, which recall and "
        f"retention leave out): {shown} (docs/datasets.md, Untidiness handled and counted)"
    )
