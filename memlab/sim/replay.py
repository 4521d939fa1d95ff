"""Teacher-forced replay: each dialogue message by message through a fresh `Runtime`.

At every assistant turn the simulator runs the runtime's ReAct iteration (retrieval, the
request through the pipeline, any tool rounds the tool policy chooses, each model call
recorded), then appends the recorded reply from the data (teacher forcing) and ends the
iteration (extraction), so runs are deterministic and cost nothing. A virtual clock follows the data's
timestamps, so months of decay simulate in milliseconds.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from memlab.dialogues.model import Dialogue, Probe
from memlab.llm.base import TASK_CHAT
from memlab.messages import Message
from memlab.runtime.agent import Runtime
from memlab.runtime.react import ModelCall, execute_react_iteration, finish_iteration
from memlab.sim.records import CallRecord, LifecycleRecord, ProbeRecord, Record
from memlab.sim.reference import sample_reference
from memlab.tokens import message_text
from memlab.trace import LLM_CALL, recording

# Messages without a timestamp advance the virtual clock by this much.
CLOCK_TICK = timedelta(seconds=30)


@dataclass(frozen=True)
class ReplayOptions:
    """What the simulator does besides replaying: which roles call the model, whether to probe.

    Attributes:
        call_roles: The roles whose recorded messages are model calls: each is a ReAct iteration that ends with it.
        probe_context: Probes are asked with the context a call would get (else the bare question).
    """

    call_roles: tuple[str, ...] = ("assistant",)
    probe_context: bool = True


def _advance(now: datetime | None, stamp: datetime | None) -> datetime | None:
    if stamp is not None:
        return stamp if now is None or stamp >= now else now
    return None if now is None else now + CLOCK_TICK


@dataclass
class Cursor:
    """Where a replay is, at a session boundary: enough to stop there and go on in another process.

    `dialogue` is the index of the dialogue in progress and `session` how many of its sessions
    are done; `sessions_done` counts the run's completed sessions. The rest is the replay's own
    state (the full-history token count, the last user message) and the runtime's clock and turn.

    Attributes:
        dialogue: Index of the dialogue in progress.
        session: How many of its sessions are done.
        sessions_done: The run's completed sessions, across dialogues (what `stop_after_session` counts).
        full_tokens: Tokens of the full history so far, the baseline of the savings metrics.
        last_user: The last user message, the query of the next call (None before one).
        now: The runtime's virtual clock.
        turn: The runtime's turn number.
        evidence: The runtime's evidence ids at the stop (the last user message's), restored on resume.
        stopped: The replay stopped at `stop_after_session`; resume from here.
    """

    dialogue: int = 0
    session: int = 0
    sessions_done: int = 0
    full_tokens: int = 0
    last_user: str | None = None
    now: datetime | None = None
    turn: int = 0
    evidence: tuple[str, ...] = ()
    stopped: bool = False

    @property
    def resuming(self) -> bool:
        """Whether the dialogue at `dialogue` is part done (its history and components carry on)."""
        return self.session > 0


def replay_dialogue(
    dialogue: Dialogue,
    runtime: Runtime,
    options: ReplayOptions = ReplayOptions(),
    cursor: Cursor | None = None,
    stop_after_session: int | None = None,
) -> Iterator[Record]:
    """Replay one dialogue and yield its records in the order things happen.

    With a `cursor` part way through this dialogue, carry on from its next session (the runtime's
    history and the components' state must be where the cursor left them). With
    `stop_after_session`, stop once the run has completed that many sessions (`cursor.stopped`).

    Args:
        dialogue: The dialogue to replay.
        runtime: Its runtime (history, components, clock), used by this dialogue alone.
        options: Which roles call the model and whether to probe.
        cursor: Where a resumed replay carries on (None: from the start); updated as the replay goes.
        stop_after_session: Stop after the run's this many completed sessions (None: never), to checkpoint.

    Yields:
        Each record (lifecycle event, model call, probe) in the order it happens.
    """
    rt = runtime
    rt.dialogue_id = dialogue.id
    cur = cursor if cursor is not None else Cursor()
    if cur.resuming:
        rt.now, rt.turn, rt.evidence = cur.now, cur.turn, cur.evidence
        full_tokens, last_user = cur.full_tokens, cur.last_user
    else:
        for c in rt.components:
            c.on_dialogue_start(rt, dialogue)
        full_tokens = rt.counter.count_request(rt.base_messages())
        last_user = None
    for session in dialogue.sessions[cur.session :]:
        rt.session_id = session.id
        rt.now = _advance(rt.now, session.started_at)
        with recording() as events:
            for c in rt.components:
                c.on_session_start(rt, session)
        yield LifecycleRecord("session.start", dialogue.id, session.id, rt.now, tuple(events))
        for message in session.messages:
            rt.now = _advance(rt.now, message.timestamp)
            iteration = message.role in options.call_roles
            if iteration:
                for call in execute_react_iteration(rt, last_user, message.id):
                    yield _call(rt, message, call, full_tokens)
                    full_tokens += sum(rt.counter.count(m) for m in call.appended)
            with recording() as events:  # a compressing history reports MEMORY_COMPRESS from its append
                rt.append(message)
                full_tokens += rt.counter.count(message)
                if message.role == "user":
                    last_user = message.text
                    rt.evidence = (message.id,) if message.id else ()
                if iteration:
                    finish_iteration(rt, message)
            if events:
                yield LifecycleRecord("message", dialogue.id, session.id, rt.now, tuple(events))
        with recording() as events:
            for c in rt.components:
                c.on_session_end(rt, session)
            sample_reference()  # latencies are read against it (memlab compare --latency)
        yield LifecycleRecord("session.end", dialogue.id, session.id, rt.now, tuple(events))
        cur.session += 1
        cur.sessions_done += 1
        if cur.sessions_done == stop_after_session:
            cur.full_tokens, cur.last_user = full_tokens, last_user
            cur.now, cur.turn, cur.evidence = rt.now, rt.turn, rt.evidence
            cur.stopped = True
            return
    with recording() as events:
        for c in rt.components:
            c.on_dialogue_end(rt, dialogue)
    yield LifecycleRecord("dialogue.end", dialogue.id, rt.session_id, rt.now, tuple(events))
    for probe in dialogue.probes:
        yield _probe(rt, dialogue, probe, options)


def _call(rt: Runtime, message: Message, call: ModelCall, full_tokens: int) -> CallRecord:
    """The record of one call: `message` is the turn it answers (the recorded reply after any tool rounds)."""
    produced = call.appended[0] if call.tool_calls else message
    asked = next((e for e in call.events if e.kind == LLM_CALL and e.data.get("task") == TASK_CHAT), None)
    return CallRecord(
        dialogue_id=rt.dialogue_id,
        session_id=rt.session_id,
        turn=rt.turn - len(call.appended),
        message_id=message.id,
        time=rt.now,
        messages_in=call.messages_in,
        messages_kept=len(call.request),
        prompt_tokens=call.prompt_tokens,
        full_tokens=full_tokens + call.tool_tokens,
        events=tuple(e for e in call.events if e is not asked),
        tool_tokens=call.tool_tokens,
        tool_calls=tuple(c.name for c in call.tool_calls),
        completion_tokens=rt.counter.count_text(message_text(produced)),
        model_call=asked,
    )


def _probe(rt: Runtime, dialogue: Dialogue, probe: Probe, options: ReplayOptions) -> ProbeRecord:
    question = Message(role="user", content=probe.question, id=f"probe:{probe.id}")
    if probe.asked_at is not None:  # else the clock stays where the dialogue ended
        rt.now = _advance(rt.now, probe.asked_at)
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
        context_parts=tuple(m.text for m in request if m is not question),
        prompt_tokens=prompt_tokens,
        results=results,
        events=tuple(events),
    )


def simulate(
    dialogues: Iterable[Dialogue],
    make_runtime: Callable[[Dialogue], Runtime],
    options: ReplayOptions = ReplayOptions(),
    cursor: Cursor | None = None,
    stop_after_session: int | None = None,
    ends: Collection[int] = (),
) -> Iterator[Record]:
    """Replay every dialogue, each through its own runtime (sessions never share state).

    With a `cursor`, dialogues before `cursor.dialogue` are skipped (a resumed run has their
    records) and that one carries on from its next session; the cursor follows the replay, so
    after a stop (`stop_after_session`) it says where to resume.

    Args:
        dialogues: The dialogues, in the run's order.
        make_runtime: A fresh runtime for one dialogue.
        options: Which roles call the model and whether to probe.
        cursor: Where a resumed run carries on (None: from the start); it follows the replay.
        stop_after_session: Stop after the run's this many completed sessions (None: never).
        ends: Positions of the dialogues that are their user's last (`user_ends`): after each, the components
            hear `on_user_end`.

    Yields:
        Every dialogue's records, in order.
    """
    cur = cursor if cursor is not None else Cursor()
    for index, dialogue in enumerate(dialogues):
        if index < cur.dialogue:
            continue
        runtime = make_runtime(dialogue)
        yield from replay_dialogue(dialogue, runtime, options, cur, stop_after_session)
        if cur.stopped:
            return
        if index in ends:
            end_user(runtime, dialogue.user_id)
        cur.dialogue, cur.session = index + 1, 0


def user_ends(dialogues: Sequence[Dialogue]) -> frozenset[int]:
    """The positions of the dialogues after which their user has none left in `dialogues`.

    Args:
        dialogues: The dialogues of a replay, in its order.
    """
    last = {dialogue.user_id: i for i, dialogue in enumerate(dialogues)}
    return frozenset(last.values())


def end_user(runtime: Runtime, user_id: str) -> None:
    """Tell `runtime`'s components that `user_id` has no dialogue left in the replay (`Component.on_user_end`)."""
    for c in runtime.components:
        c.on_user_end(runtime, user_id)
