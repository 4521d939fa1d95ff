"""Tool-call integrity: the units a memory strategy may keep or drop, never split.

A unit is one message (or item), or a tool exchange: the assistant message whose `tool_calls`
ask for tools plus the `tool` messages that answer them (for items: the `function_call` items
plus their `function_call_output` items). Providers reject a tool result without its call and
a call without its result, so every strategy here cuts histories only between units.

>>> from memlab.messages import Message, ToolCall
>>> call = Message(role="assistant", tool_calls=(ToolCall("c1", "lookup"),))
>>> result = Message(role="tool", content="x", tool_call_id="c1")
>>> [len(u) for u in message_units([Message(role="user", content="hi"), call, result])]
[1, 2]
"""

from __future__ import annotations

from collections.abc import Sequence

from memlab.messages import FunctionCall, FunctionCallOutput, Item, Message


def message_units(messages: Sequence[Message]) -> list[list[Message]]:
    """`messages` cut into units: an assistant `tool_calls` message joins the tool results that follow it."""
    units: list[list[Message]] = []
    open_ids: set[str] = set()
    for m in messages:
        if m.role == "tool" and units and m.tool_call_id in open_ids:
            units[-1].append(m)
            open_ids.discard(m.tool_call_id or "")
            continue
        units.append([m])
        open_ids = {c.id for c in m.tool_calls} if m.role == "assistant" else set()
    return units


def item_units(items: Sequence[Item]) -> list[list[Item]]:
    """`items` cut into units: function calls and every item up to the last of their outputs are one unit.

    A call whose output has not arrived yet keeps its unit open to the end, so a pending call is
    never separated from the output that will follow it.
    """
    units: list[list[Item]] = []
    open_ids: set[str] = set()
    for it in items:
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


def orphans(messages: Sequence[Message]) -> list[Message]:
    """Tool results without their call and calls without their results (empty for a well-formed history)."""
    bad: list[Message] = []
    for unit in message_units(messages):
        head = unit[0]
        if head.role == "tool":
            bad.append(head)
        elif head.role == "assistant" and head.tool_calls:
            answered = {m.tool_call_id for m in unit[1:]}
            if any(c.id not in answered for c in head.tool_calls):
                bad.append(head)
    return bad
