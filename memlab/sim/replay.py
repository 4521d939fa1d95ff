"""Teacher-forced replay: each dialogue message by message through a fresh `Runtime`.

At every assistant turn the simulator builds the request (system prompt plus history)
through the runtime's pipeline and records it, then appends the recorded reply from the
data, so runs are deterministic and cost nothing. A virtual clock follows the data's
timestamps, so months of decay simulate in milliseconds.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta

from memlab.dialogues.model import Dialogue, Probe
from memlab.messages import Message
from memlab.runtime.agent import Runtime
from memlab.sim.records import CallRecord, LifecycleRecord, ProbeRecord, Record
from memlab.trace import recording

# Messages without a timestamp advance the virtual clock by this much.
CLOCK_TICK = timedelta(seconds=30)


@dataclass(frozen=True)
class ReplayOptions:
    """What the simulator does besides replaying: which roles call the model, whether to probe."""

    call_roles: tuple[str, ...] = ("assistant",)
    probe_context: bool = True


def _advance(now: datetime | None, stamp: datetime | None) -> datetime | None:
    if stamp is not None:
        return stamp if now is None or stamp >= now else now
    return None if now is None else now + CLOCK_TICK


def replay_dialogue(dialogue: Dialogue, runtime: Runtime, options: ReplayOptions = ReplayOptions()) -> Iterator[Record]:
    """Replay one dialogue and yield its records in the order things happen."""
    rt = runtime
    rt.dialogue_id = dialogue.id
    for c in rt.components:
        c.on_dialogue_start(rt, dialogue)
    full_tokens = rt.counter.count_request(rt.base_messages())
    last_user: str | None = None
    for session in dialogue.sessions:
        rt.session_id = session.id
        rt.now = _advance(rt.now, session.started_at)
        with recording() as events:
            for c in rt.components:
                c.on_session_start(rt, session)
        yield LifecycleRecord("session.start", dialogue.id, session.id, rt.now, tuple(events))
        for message in session.messages:
            rt.now = _advance(rt.now, message.timestamp)
            if message.role in options.call_roles:
                yield _call(rt, message, full_tokens, last_user)
            with recording() as events:  # a compressing history reports MEMORY_COMPRESS from its append
                rt.history.append(message)
                full_tokens += rt.counter.count(message)
                if message.role == "user":
                    last_user = message.text
                rt.turn += 1
                for c in rt.components:
                    c.on_message(rt, message)
            if events:
                yield LifecycleRecord("message", dialogue.id, session.id, rt.now, tuple(events))
        with recording() as events:
            for c in rt.components:
                c.on_session_end(rt, session)
        yield LifecycleRecord("session.end", dialogue.id, session.id, rt.now, tuple(events))
    with recording() as events:
        for c in rt.components:
            c.on_dialogue_end(rt, dialogue)
    yield LifecycleRecord("dialogue.end", dialogue.id, rt.session_id, rt.now, tuple(events))
    for probe in dialogue.probes:
        yield _probe(rt, dialogue, probe, options)


def _call(rt: Runtime, message: Message, full_tokens: int, query: str | None) -> CallRecord:
    with recording() as events:
        messages_in = len(rt.history)
        request = rt.build_request(query=query)
        prompt_tokens = rt.counter.count_request(request)
    return CallRecord(
        dialogue_id=rt.dialogue_id,
        session_id=rt.session_id,
        turn=rt.turn,
        message_id=message.id,
        time=rt.now,
        messages_in=messages_in,
        messages_kept=len(request),
        prompt_tokens=prompt_tokens,
        full_tokens=full_tokens,
        events=tuple(events),
    )


def _probe(rt: Runtime, dialogue: Dialogue, probe: Probe, options: ReplayOptions) -> ProbeRecord:
    question = Message(role="user", content=probe.question, id=f"probe:{probe.id}")
    with recording() as events:
        results: dict[str, object] = {}
        for c in rt.components:
            results.update(c.on_probe(rt, probe))
        request = rt.build_request(extra=[question], query=probe.question) if options.probe_context else [question]
        prompt_tokens = rt.counter.count_request(request)
    kept = tuple(m.id for m in request if m.id is not None and m is not question)
    return ProbeRecord(
        dialogue_id=dialogue.id,
        probe=probe,
        kept_ids=kept,
        context_text="\n".join(m.text for m in request if m is not question),
        prompt_tokens=prompt_tokens,
        results=results,
        events=tuple(events),
    )


def simulate(
    dialogues: Iterable[Dialogue],
    make_runtime: Callable[[Dialogue], Runtime],
    options: ReplayOptions = ReplayOptions(),
) -> Iterator[Record]:
    """Replay every dialogue, each through its own runtime (sessions never share state)."""
    for dialogue in dialogues:
        yield from replay_dialogue(dialogue, make_runtime(dialogue), options)
