"""Tool-call units: the pieces every context and memory strategy keeps or drops whole, never splits.

Providers reject a `tool` message that does not directly follow the assistant message whose
`tool_calls` it answers, and an assistant `tool_calls` message whose results are missing. So
strategies cut a history only between *units*: an assistant message with tool calls plus the
tool messages right after it that answer those calls is one unit; every other message is a
unit of its own. A history that is already broken keeps each broken piece as a unit of its own:
strategies never create an orphan, and never repair one.

Pairing is one to one: each call is answered by exactly one result. A second result for a call
id that is already answered is not part of the unit; it is an orphan of its own (Anthropic
rejects it, "each tool_use must have a single result"; OpenAI pairs each `tool` message with one
call). The design documents do not address the case (they store `function_call` /
`function_call_output` items keyed by `call_id`, one output per call); this is our rule. The ids
within one call message count as a set. Items (the AgentMemory model) group the same way, but a
unit stays open until every call's output has arrived or a user turn abandons the calls still
pending (`item_units`, `abandons_pending_calls`).

>>> from memlab.messages import Message, ToolCall
>>> call = Message("assistant", None, tool_calls=(ToolCall("c1", "lookup"),))
>>> ms = [Message("user", "hi"), call, Message("tool", "42", tool_call_id="c1"), Message("assistant", "42.")]
>>> unit_spans(ms)
[(0, 1), (1, 3), (3, 4)]
>>> orphans(ms), orphans(ms[2:]), orphans(ms[:2])
([], [0], [1])
>>> orphans(ms[:3] + [ms[2]])  # a second result for c1
[3]
"""

from __future__ import annotations

from collections.abc import Sequence

from memlab.messages import FunctionCall, FunctionCallOutput, Item, Message, MessageItem


def _call_ids(m: Message) -> frozenset[str] | None:
    """The call ids of an assistant tool-call message, None for any other message."""
    if m.role == "assistant" and m.tool_calls:
        return frozenset(c.id for c in m.tool_calls)
    return None


def _unit_end(messages: Sequence[Message], start: int) -> int:
    """One past the last message of the unit that begins at `start`: each call takes its first result only."""
    ids = _call_ids(messages[start])
    end = start + 1
    if ids is None:
        return end
    open_ids = set(ids)
    while end < len(messages) and messages[end].role == "tool" and messages[end].tool_call_id in open_ids:
        open_ids.discard(messages[end].tool_call_id or "")
        end += 1
    return end


def unit_spans(messages: Sequence[Message]) -> list[tuple[int, int]]:
    """Every unit as a half-open span ``(start, end)``, in order, covering all messages."""
    spans: list[tuple[int, int]] = []
    i = 0
    while i < len(messages):
        end = _unit_end(messages, i)
        spans.append((i, end))
        i = end
    return spans


def message_units(messages: Sequence[Message]) -> list[list[Message]]:
    """`messages` cut into units, each a list of messages."""
    return [list(messages[start:end]) for start, end in unit_spans(messages)]


def unit_start_at(messages: Sequence[Message], i: int) -> int:
    """The first index of the unit holding message `i`; looks back over that unit only."""
    if messages[i].role != "tool":
        return i
    a = i
    while a > 0 and messages[a - 1].role == "tool":
        a -= 1
    head = a - 1  # the only message that can head a unit holding `i`: the one before the run of results
    return head if head >= 0 and _unit_end(messages, head) > i else i


def unit_end_at(messages: Sequence[Message], i: int) -> int:
    """One past the last index of the unit holding message `i`."""
    return _unit_end(messages, unit_start_at(messages, i))


def tail_start(messages: Sequence[Message], keep_last: int) -> int:
    """Where the last `keep_last` messages begin, moved back to the start of the unit it would split."""
    n = len(messages)
    if keep_last == 0:
        return n
    return unit_start_at(messages, n - keep_last) if keep_last < n else 0


def orphans(messages: Sequence[Message]) -> list[int]:
    """Indices of messages a provider would reject: calls without all their results, results without their call."""
    bad = []
    for start, end in unit_spans(messages):
        first = messages[start]
        ids = _call_ids(first)
        if (ids is not None and end - start - 1 < len(ids)) or first.role == "tool":
            bad.append(start)
    return bad


def abandons_pending_calls(role: str) -> bool:
    """Whether a message or item of `role` abandons the tool calls still waiting for their output.

    A user turn does: an agent runtime answers its calls before it takes the next user input
    (`memlab.runtime.react` runs them at once), so an output arriving after one could no longer be
    paired with its call in order. Anything else (more calls, an assistant message beside them)
    leaves the calls pending.
    """
    return role == "user"


def item_units(items: Sequence[Item]) -> list[list[Item]]:
    """`items` cut into units: function calls and every item up to the last of their outputs are one unit.

    A call whose output has not arrived yet keeps its unit open, so a pending call is never
    separated from the output that will follow it, until a user item abandons it
    (`abandons_pending_calls`): that item starts a unit of its own, and the abandoned call can
    no longer hold a window open.
    """
    units: list[list[Item]] = []
    open_ids: set[str] = set()
    for it in items:
        if isinstance(it, MessageItem) and abandons_pending_calls(it.role):
            open_ids.clear()
        if open_ids:
            units[-1].append(it)
            if isinstance(it, FunctionCall):
                open_ids.add(it.call_id)
            elif isinstance(it, FunctionCallOutput):
                open_ids.discard(it.call_id)
            continue
        units.append([it])
        if isinstance(it, FunctionCall):
            open_ids.add(it.call_id)
    return units
