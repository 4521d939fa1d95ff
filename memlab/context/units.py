"""Tool-call integrity: the units every strategy keeps or drops whole.

Providers reject a `tool` message that does not directly follow the assistant message whose
`tool_calls` it answers, and an assistant `tool_calls` message whose results are missing. So
strategies cut a history only between *units*: an assistant message with tool calls plus the
tool messages right after it that answer those calls is one unit; every other message is a
unit of its own. A history that is already broken (a result with no call) keeps each broken
piece as a unit of its own: strategies never create an orphan, and never repair one.

>>> from memlab.messages import Message, ToolCall
>>> call = Message("assistant", None, tool_calls=(ToolCall("c1", "lookup"),))
>>> ms = [Message("user", "hi"), call, Message("tool", "42", tool_call_id="c1"), Message("assistant", "42.")]
>>> unit_spans(ms)
[(0, 1), (1, 3), (3, 4)]
>>> orphans(ms), orphans(ms[2:]), orphans(ms[:2])
([], [0], [1])
"""

from __future__ import annotations

from collections.abc import Sequence

from memlab.messages import Message


def _call_ids(m: Message) -> frozenset[str] | None:
    """The call ids of an assistant tool-call message, None for any other message."""
    if m.role == "assistant" and m.tool_calls:
        return frozenset(c.id for c in m.tool_calls)
    return None


def unit_spans(messages: Sequence[Message]) -> list[tuple[int, int]]:
    """Every unit as a half-open span ``(start, end)``, in order, covering all messages."""
    spans: list[tuple[int, int]] = []
    i, n = 0, len(messages)
    while i < n:
        end = i + 1
        ids = _call_ids(messages[i])
        if ids is not None:
            while end < n and messages[end].role == "tool" and messages[end].tool_call_id in ids:
                end += 1
        spans.append((i, end))
        i = end
    return spans


def unit_start_at(messages: Sequence[Message], i: int) -> int:
    """The first index of the unit holding message `i`; looks back over that unit only."""
    if messages[i].role != "tool":
        return i
    a = i
    while a > 0 and messages[a - 1].role == "tool":
        a -= 1
    if a == 0:
        return i
    ids = _call_ids(messages[a - 1])
    if ids is None or any(messages[j].tool_call_id not in ids for j in range(a, i + 1)):
        return i  # a result that answers no call directly before it
    return a - 1


def unit_end_at(messages: Sequence[Message], i: int) -> int:
    """One past the last index of the unit holding message `i`."""
    start = unit_start_at(messages, i)
    ids = _call_ids(messages[start])
    end = start + 1
    if ids is not None:
        while end < len(messages) and messages[end].role == "tool" and messages[end].tool_call_id in ids:
            end += 1
    return end


def orphans(messages: Sequence[Message]) -> list[int]:
    """Indices of messages a provider would reject: unanswered tool calls and results without their call."""
    bad = []
    for start, end in unit_spans(messages):
        first = messages[start]
        ids = _call_ids(first)
        if ids is not None:
            if {m.tool_call_id for m in messages[start + 1 : end]} != ids:
                bad.append(start)
        elif first.role == "tool":
            bad.append(start)
    return bad


def tail_start(messages: Sequence[Message], keep_last: int) -> int:
    """Where the last `keep_last` messages begin, moved back to the start of the unit it would split."""
    n = len(messages)
    if keep_last == 0:
        return n
    return unit_start_at(messages, n - keep_last) if keep_last < n else 0
