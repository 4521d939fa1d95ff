"""What a replay emits: one record per simulated LLM call, per probe and per lifecycle event."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from memlab.dialogues.model import Probe
from memlab.trace import Event


@dataclass(frozen=True)
class CallRecord:
    """One simulated LLM call: what the history held and what would have been sent.

    Args:
        dialogue_id: The dialogue.
        session_id: Its session.
        turn: The call's turn number.
        message_id: The reply's id (None: none).
        time: The replayed time (None: none).
        messages_in: Messages the history held.
        messages_kept: Messages sent.
        prompt_tokens: Tokens sent.
        full_tokens: Tokens the whole history would have sent.
        events: What the strategies did.
        tool_tokens: The tool schemas' share of `prompt_tokens`.
        tool_calls: Names of the tools the model called.
        completion_tokens: What the call produced, as a provider would bill it.
        model_call: The provider call that answered it (None: simulated).
    """

    dialogue_id: str
    session_id: str
    turn: int
    message_id: str | None
    time: datetime | None
    messages_in: int
    messages_kept: int
    prompt_tokens: int
    full_tokens: int
    events: tuple[Event, ...] = ()
    tool_tokens: int = 0  # the tool schemas' share of prompt_tokens
    tool_calls: tuple[str, ...] = ()  # names of the tools the model called in this call
    # What the call produced, as the runtime counts it: the reply recorded in the data, or the
    # assistant(tool_calls) message of a tool round; what a provider bills as completion tokens.
    completion_tokens: int = 0
    # The LLM_CALL event of the model answering this very call (the tool policy asked the provider),
    # with the usage it billed; None for a simulated call. Kept out of `events`, which holds the
    # strategies' own work, so it is counted once, as this call and not as an auxiliary call.
    model_call: Event | None = None


@dataclass(frozen=True)
class ProbeRecord:
    """A probe question asked at the end of a dialogue, with the context that would carry it.

    `kept_ids` are the source ids of the messages sent verbatim; `context_parts` the text of each
    message of the request (summaries and injected memories included), the messages' own strings:
    a dialogue's probes share them rather than each holding a copy of the whole request (199
    probes over a 10 MB message held 8 GB); `results` holds what components measured for it (e.g.
    the evidence ids of retrieved long-term memories, best first).

    Args:
        dialogue_id: The dialogue.
        probe: The question asked.
        kept_ids: Source ids of the messages sent verbatim.
        context_parts: The text of each message of the request.
        prompt_tokens: Tokens of the request.
        results: What components measured for it (e.g. retrieved memories' evidence).
        events: What the strategies did.
    """

    dialogue_id: str
    probe: Probe
    kept_ids: tuple[str, ...]
    context_parts: tuple[str, ...]
    prompt_tokens: int
    results: dict[str, Any] = field(default_factory=dict)
    events: tuple[Event, ...] = ()

    @property
    def context_text(self) -> str:
        """The whole request's text, one message per line (built on each call: read it once)."""
        return "\n".join(self.context_parts)


@dataclass(frozen=True)
class LifecycleRecord:
    """`session.start`, `session.end` or `dialogue.end`, with the events its handlers emitted.

    Args:
        kind: session.start, session.end or dialogue.end.
        dialogue_id: The dialogue.
        session_id: The session.
        time: The replayed time (None: none).
        events: What its handlers emitted.
    """

    kind: str
    dialogue_id: str
    session_id: str
    time: datetime | None
    events: tuple[Event, ...] = ()


Record = CallRecord | ProbeRecord | LifecycleRecord
