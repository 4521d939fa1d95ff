"""The agent runtime the simulator drives: history, an ordered request pipeline, components.

The first design document orders what runs before each LLM call: request interceptors at
order 10, 20, 30 (ContextEditingInterceptor), 40+, then BEFORE_LLM_CALL hooks such as the
SummarizationHook at order 50. memlab runs both kinds as one pipeline of `RequestStage`s,
lowest order first (stable for equal orders), which is the order the document draws.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, runtime_checkable

from memlab.messages import Message, ToolCall, system, tool_result
from memlab.tokens import Tallied, TalliedMessages, TokenCounter, request_tokens
from memlab.trace import TOOL_UNKNOWN, emit

if TYPE_CHECKING:
    from memlab.dialogues.model import Dialogue, Probe, Session
    from memlab.runtime.react import ToolPolicy

# Orders in the request chain; stages pick one of these or a number between.
ORDER_LONGTERM_INJECT = 20  # ours: memories are in the request before it is cropped
# Design document: "ContextEditingInterceptor 是拦截器链中 order=30 的拦截器".
ORDER_CONTEXT_EDITING = 30
# Design document: "SummarizationHook 是注册在 BEFORE_LLM_CALL 阶段的 Hook（order=50）".
ORDER_SUMMARIZATION_HOOK = 50
# Tool rounds a ReAct iteration may run before the reply, at most (a model that keeps calling tools is cut off).
DEFAULT_MAX_TOOL_ROUNDS = 3


@dataclass(frozen=True)
class SecurityContext:
    """Who the runtime is serving; set by the runtime, never by the model (design: SecurityContext).

    Args:
        user_id: The user served.
        agent_id: The agent serving (selects its long-term settings).
    """

    user_id: str
    agent_id: str = "default"


@dataclass
class CallContext:
    """What a stage may know about the call it shapes.

    Args:
        dialogue_id: The dialogue being served.
        session_id: Its current session.
        turn: The call's turn number.
        now: The replayed time (None: the data has none).
        security: Who is served (set by the runtime, never the model).
        query: The newest user message's text (None: none).
        counter: The runtime's token counter, for a stage that reports what it adds (None: not given).
        evidence: Ids of the messages that hold the answer of the probe being asked (for measuring, never for
            choosing).
    """

    dialogue_id: str
    session_id: str
    turn: int
    now: datetime | None
    security: SecurityContext
    query: str | None = None
    counter: TokenCounter | None = None
    # Ids of the messages the current ReAct iteration answers: provenance the runtime knows, so a
    # memory the model saves with a tool cites them (the model never sees or sets ids).
    evidence: tuple[str, ...] = ()


@runtime_checkable
class RequestStage(Protocol):
    """One step of the request pipeline: takes the messages about to be sent, returns new ones."""

    order: int

    def process(self, messages: Sequence[Message], ctx: CallContext) -> Sequence[Message]: ...


@runtime_checkable
class History(Protocol):
    """The conversation state the runtime keeps (ChatMemory, or an AgentMemory adapter)."""

    def append(self, message: Message) -> None: ...

    def messages(self) -> Sequence[Message]: ...

    def __len__(self) -> int: ...


class Component:
    """A part of the agent loop: contributes request stages and reacts to lifecycle events.

    Every hook is a no-op here, so the plain `Component` is the "none" choice of any group.
    """

    # True for a component that carries what one dialogue of a user left to the user's next (long-term memory):
    # a parallel replay then keeps each user's dialogues in one worker, in order (`memlab.sim.simulate_parallel`).
    keeps_user_state: ClassVar[bool] = False

    def stages(self) -> Sequence[RequestStage]:
        return ()

    def on_dialogue_start(self, runtime: Runtime, dialogue: Dialogue) -> None:
        """Reset per-dialogue state (a user's later dialogue may follow: see `keeps_user_state`)."""

    def on_session_start(self, runtime: Runtime, session: Session) -> None: ...

    def on_message(self, runtime: Runtime, message: Message) -> None:
        """After `message` was appended to the history."""

    def before_iteration(self, runtime: Runtime, query: str | None) -> None:
        """Step 1 of a ReAct iteration: prepare what the requests of this iteration carry (retrieval)."""

    def tools(self, runtime: Runtime) -> Sequence[dict[str, Any]]:
        """The OpenAI tool schemas this component offers the model now."""
        return ()

    def call_tool(self, runtime: Runtime, call: ToolCall) -> Message | None:
        """The `tool` message answering `call`, or None when the tool is not this component's."""
        return None

    def on_iteration_end(self, runtime: Runtime, reply: Message) -> None:
        """Steps 4-5 of a ReAct iteration: `reply` (the model's final answer) is in the history."""

    def on_session_end(self, runtime: Runtime, session: Session) -> None: ...

    def on_dialogue_end(self, runtime: Runtime, dialogue: Dialogue) -> None: ...

    def on_probe(self, runtime: Runtime, probe: Probe) -> dict[str, object]:
        """Answer-time measurements for one probe question (e.g. long-term retrieval)."""
        return {}

    def on_user_end(self, runtime: Runtime, user_id: str) -> None:
        """After the user's last dialogue of the replay, its probes included: what was kept for them can go.

        With `keeps_user_state`, every earlier dialogue of the user replayed before, in this process.
        """

    def checkpoint(self) -> dict[str, Any]:
        """The in-process state a replay stopped at a session boundary must carry to another process."""
        return {}

    def restore(self, state: dict[str, Any]) -> None:
        """Take back what `checkpoint` returned (in a new process, before the replay resumes)."""

    def close(self) -> None:
        """Release what the component holds open (an event loop, a thread): no runtime uses it after this."""


@dataclass
class Runtime:
    """One agent serving one dialogue: history plus the pipeline every request goes through.

    Args:
        history: The stored conversation.
        counter: Counts the tokens of each request.
        security: Who is served.
        components: What shapes requests and reacts to turns (their stages run by order).
        system_prompt: The agent's instructions (None: none).
        dialogue_id: The dialogue served.
        session_id: Its current session.
        now: The replayed time (None: none).
        turn: The current turn number.
        policy: Who decides tool calls (None: no tool is ever called).
        max_tool_rounds: Tool rounds allowed before the reply.
        evidence: Ids of the messages that hold the current probe's answer (for measuring).
    """

    history: History
    counter: TokenCounter
    security: SecurityContext
    components: Sequence[Component] = ()
    system_prompt: str | None = None
    dialogue_id: str = ""
    session_id: str = ""
    now: datetime | None = None
    turn: int = 0
    policy: ToolPolicy | None = None  # who decides tool calls (None: no tool is ever called)
    max_tool_rounds: int = DEFAULT_MAX_TOOL_ROUNDS
    evidence: tuple[str, ...] = ()
    _stages: list[RequestStage] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        stages = [s for c in self.components for s in c.stages()]
        self._stages = sorted(stages, key=lambda s: s.order)

    @property
    def stages(self) -> list[RequestStage]:
        return list(self._stages)

    def base_messages(self, extra: Sequence[Message] = ()) -> Sequence[Message]:
        """System prompt plus the stored history (plus `extra`), before any stage.

        When the history knows its token total (`Tallied`), so does the result.
        """
        head = [system(self.system_prompt)] if self.system_prompt else []
        history, tail = self.history.messages(), list(extra)
        if not isinstance(history, Tallied):
            return [*head, *history, *tail]
        if not head and not tail:
            return history  # a read-only view (HistoryView): not copied
        return TalliedMessages(
            [*head, *history, *tail],
            lambda c, _: request_tokens(c, head) + history.tokens(c) + request_tokens(c, tail),
        )

    def context(self, query: str | None = None) -> CallContext:
        return CallContext(
            dialogue_id=self.dialogue_id,
            session_id=self.session_id,
            turn=self.turn,
            now=self.now,
            security=self.security,
            query=query,
            counter=self.counter,
            evidence=self.evidence,
        )

    def append(self, message: Message) -> None:
        """Add `message` to the history and tell every component."""
        self.history.append(message)
        self.turn += 1
        for c in self.components:
            c.on_message(self, message)

    def tools(self) -> list[dict[str, Any]]:
        """Every tool the components offer now, in component order."""
        return [t for c in self.components for t in c.tools(self)]

    def execute_tool(self, call: ToolCall) -> Message:
        """Run `call` with the component that owns it; an unknown tool answers with an error message."""
        for c in self.components:
            result = c.call_tool(self, call)
            if result is not None:
                return result
        emit(TOOL_UNKNOWN, name=call.name)
        error = json.dumps({"error": f"unknown tool {call.name!r}"})
        return tool_result(call, error)

    def build_request(self, extra: Sequence[Message] = (), query: str | None = None) -> Sequence[Message]:
        """What would be sent to the model now: base messages through every stage in order."""
        messages = self.base_messages(extra)
        ctx = self.context(query)
        for stage in self._stages:
            messages = stage.process(messages, ctx)
        return messages
