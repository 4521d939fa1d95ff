"""The ReAct iteration of the first design document (`executeReactIteration`), one per assistant turn.

The document's five steps, and where memlab runs each:

1. retrieve memories for the current user message and 2. inject them into the system prompt:
   every component's `before_iteration` (long-term memory retrieves at session start or on every
   iteration, `longterm.retrieve`), then the request stages (injection at order 20);
3. call the model: the request goes through the interceptor chain and hooks (`Runtime.build_request`);
   when components offer tools, the `ToolPolicy` decides on tool calls, which run at once, and their
   `assistant(tool_calls)` / `tool` messages join the history before the model is called again;
4. extract new memories and 5. persist them: every component's `on_iteration_end`, after the
   final reply is in the history (`finish_iteration`).

A replay is teacher-forced: the final reply is the recorded one, so `execute_react_iteration`
returns the model calls up to it (the tool rounds first) and the simulator appends the reply.

An assistant turn that opens a conversation without a system prompt (LoCoMo's speaker_b speaking
first) has an empty request. A real agent asks its model nothing then: there is no turn to act on,
and a provider refuses ``messages: []`` (OpenAI answers 400). So the tool policy is not asked; the
turn is still recorded as its simulated call (its prompt is the reply priming alone), as every
assistant turn is.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Protocol, runtime_checkable

from memlab.llm.base import TASK_CHAT, ChatModel
from memlab.messages import Message, ToolCall
from memlab.runtime.agent import CallContext, Runtime
from memlab.tokens import tool_schema_tokens
from memlab.trace import Event, recording


@runtime_checkable
class ToolPolicy(Protocol):
    """Who decides, from the request and the tools offered, which tools to call before replying."""

    def choose(
        self, request: Sequence[Message], tools: Sequence[Mapping[str, Any]], ctx: CallContext
    ) -> tuple[ToolCall, ...]: ...


class ModelToolPolicy:
    """The model decides, through its provider's tool calling (litellm: the `tools` parameter).

    Parameters: the fields of `memlab.runtime.schemas.ModelPolicyConfig`, each documented there once.
    """

    def __init__(self, llm: ChatModel) -> None:
        self.llm = llm

    def choose(
        self, request: Sequence[Message], tools: Sequence[Mapping[str, Any]], ctx: CallContext
    ) -> tuple[ToolCall, ...]:
        completion = self.llm.complete(request, task=TASK_CHAT, tools=[dict(t) for t in tools])
        return completion.tool_calls


@dataclass(frozen=True)
class ModelCall:
    """One model call of an iteration: what was sent (tools included) and the tool calls it made.

    Args:
        messages_in: Messages before any stage.
        request: What was sent.
        tools: The tool schemas offered.
        prompt_tokens: Tokens of the request, tools included.
        tool_tokens: The tool schemas' share of them.
        tool_calls: The tool calls the model made.
        appended: What the call added to the history (the call and its results).
        events: What the stages emitted.
    """

    messages_in: int
    request: tuple[Message, ...]
    tools: tuple[Mapping[str, Any], ...]
    prompt_tokens: int  # the messages and the tool schemas
    tool_tokens: int
    tool_calls: tuple[ToolCall, ...]
    appended: tuple[Message, ...]  # the assistant(tool_calls) and tool messages it added to the history
    events: tuple[Event, ...]


def execute_react_iteration(rt: Runtime, query: str | None, reply_id: str | None = None) -> list[ModelCall]:
    """Steps 1-3 for the turn the model must now answer: the calls made before its final reply.

    Each call is recorded on its own (its events: retrieval in the first, tool execution and
    the history writes after it). Tool-call messages get ids ``<reply_id>:react<N>``.

    Args:
        rt: The runtime serving the dialogue.
        query: The newest user message's text (None: none).
        reply_id: The id of the reply that closes the turn (None: none).
    """
    calls: list[ModelCall] = []
    for round_ in range(rt.max_tool_rounds + 1):
        with recording() as events:
            if round_ == 0:
                for c in rt.components:
                    c.before_iteration(rt, query)
            messages_in = len(rt.history)
            request = rt.build_request(query=query)
            tools = rt.tools()
            tool_tokens = tool_schema_tokens(tools, rt.counter)
            prompt_tokens = rt.counter.count_request(request) + tool_tokens
            chosen: tuple[ToolCall, ...] = ()
            appended: list[Message] = []
            if request and tools and rt.policy is not None and round_ < rt.max_tool_rounds:
                chosen = rt.policy.choose(request, tools, rt.context(query))
            if chosen:
                prefix = f"{reply_id}:react{round_}" if reply_id else None
                appended.append(Message(role="assistant", content=None, tool_calls=chosen, id=prefix))
                rt.append(appended[-1])
                for n, call in enumerate(chosen):
                    result = replace(rt.execute_tool(call), id=f"{prefix}.{n}" if prefix else None)
                    appended.append(result)
                    rt.append(result)
        calls.append(
            ModelCall(
                messages_in,
                tuple(request),
                tuple(tools),
                prompt_tokens,
                tool_tokens,
                chosen,
                tuple(appended),
                tuple(events),
            )
        )
        if not chosen:
            break
    return calls


def finish_iteration(rt: Runtime, reply: Message) -> None:
    """Steps 4-5: `reply` is in the history; components extract and persist what it completes.

    Args:
        rt: The runtime serving the dialogue.
        reply: The final reply of the turn.
    """
    for c in rt.components:
        c.on_iteration_end(rt, reply)
