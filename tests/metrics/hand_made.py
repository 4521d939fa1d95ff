"""Hand-made records: calls, probes and events whose metrics are known by construction."""

from __future__ import annotations

from memlab.dialogues.model import Probe
from memlab.sim.records import CallRecord, LifecycleRecord, ProbeRecord
from memlab.trace import Event


def call(prompt: int, full: int, *events: Event, dialogue: str = "d1", turn: int = 1) -> CallRecord:
    return CallRecord(dialogue, "s1", turn, f"{dialogue}:{turn}", None, 1, 1, prompt, full, tuple(events))


def probe(
    evidence: tuple[str, ...],
    kept: tuple[str, ...],
    *events: Event,
    answer: str | None = "x",
    context: str = "",
    category: str = "1",
    dialogue: str = "d1",
    pid: str = "q1",
    results: dict[str, object] | None = None,
) -> ProbeRecord:
    return ProbeRecord(
        dialogue_id=dialogue,
        probe=Probe(pid, "question?", answer, evidence, category),
        kept_ids=kept,
        context_parts=(context,),
        prompt_tokens=10,
        results=results or {},
        events=tuple(events),
    )


def lifecycle(*events: Event, dialogue: str = "d1") -> LifecycleRecord:
    return LifecycleRecord("session.end", dialogue, "s1", None, tuple(events))
