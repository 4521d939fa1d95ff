"""The agent runtime the simulator drives: history, an ordered request pipeline, components.

The first design document orders what runs before each LLM call: request interceptors at
order 10, 20, 30 (ContextEditingInterceptor), 40+, then BEFORE_LLM_CALL hooks such as the
SummarizationHook at order 50. memlab runs both kinds as one pipeline of `RequestStage`s,
lowest order first (stable for equal orders), which is the order the document draws.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from memlab.messages import Message, system
from memlab.tokens import TokenCounter

if TYPE_CHECKING:
    from memlab.dialogues.model import Dialogue, Probe, Session

# Orders of the design document's chain; stages pick one of these or a number between.
ORDER_LONGTERM_INJECT = 20
ORDER_CONTEXT_EDITING = 30
ORDER_SUMMARIZATION_HOOK = 50


@dataclass(frozen=True)
class SecurityContext:
    """Who the runtime is serving; set by the runtime, never by the model (design: SecurityContext)."""

    user_id: str
    agent_id: str = "default"


@dataclass
class CallContext:
    """What a stage may know about the call it shapes."""

    dialogue_id: str
    session_id: str
    turn: int
    now: datetime | None
    security: SecurityContext
    query: str | None = None
    counter: TokenCounter | None = None


@runtime_checkable
class RequestStage(Protocol):
    """One step of the request pipeline: takes the messages about to be sent, returns new ones."""

    order: int

    def process(self, messages: list[Message], ctx: CallContext) -> list[Message]: ...


@runtime_checkable
class History(Protocol):
    """The conversation state the runtime keeps (ChatMemory, or an AgentMemory adapter)."""

    def append(self, message: Message) -> None: ...

    def messages(self) -> list[Message]: ...

    def __len__(self) -> int: ...


class Component:
    """A part of the agent loop: contributes request stages and reacts to lifecycle events.

    Every hook is a no-op here, so the plain `Component` is the "none" choice of any group.
    """

    def stages(self) -> Sequence[RequestStage]:
        return ()

    def on_dialogue_start(self, runtime: Runtime, dialogue: Dialogue) -> None:
        """Reset per-dialogue state (each dialogue is a different user)."""

    def on_session_start(self, runtime: Runtime, session: Session) -> None: ...

    def on_message(self, runtime: Runtime, message: Message) -> None:
        """After `message` was appended to the history."""

    def on_session_end(self, runtime: Runtime, session: Session) -> None: ...

    def on_dialogue_end(self, runtime: Runtime, dialogue: Dialogue) -> None: ...

    def on_probe(self, runtime: Runtime, probe: Probe) -> dict[str, object]:
        """Answer-time measurements for one probe question (e.g. long-term retrieval)."""
        return {}


@dataclass
class Runtime:
    """One agent serving one dialogue: history plus the pipeline every request goes through."""

    history: History
    counter: TokenCounter
    security: SecurityContext
    components: Sequence[Component] = ()
    system_prompt: str | None = None
    dialogue_id: str = ""
    session_id: str = ""
    now: datetime | None = None
    turn: int = 0
    _stages: list[RequestStage] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        stages = [s for c in self.components for s in c.stages()]
        self._stages = sorted(stages, key=lambda s: s.order)

    @property
    def stages(self) -> list[RequestStage]:
        return list(self._stages)

    def base_messages(self, extra: Sequence[Message] = ()) -> list[Message]:
        """System prompt plus the stored history (plus `extra`), before any stage."""
        head = [system(self.system_prompt)] if self.system_prompt else []
        return head + self.history.messages() + list(extra)

    def context(self, query: str | None = None) -> CallContext:
        return CallContext(
            dialogue_id=self.dialogue_id,
            session_id=self.session_id,
            turn=self.turn,
            now=self.now,
            security=self.security,
            query=query,
            counter=self.counter,
        )

    def build_request(self, extra: Sequence[Message] = (), query: str | None = None) -> list[Message]:
        """What would be sent to the model now: base messages through every stage in order."""
        messages = self.base_messages(extra)
        ctx = self.context(query)
        for stage in self._stages:
            messages = stage.process(messages, ctx)
        return messages
