"""OpenAI-format messages read from a file: checked field by field, tool results paired with their calls.

Shared by the JSONL and tau-bench loaders. Content may be null or the string "None" on an
assistant message that only calls tools (real logs have both); `Message.from_openai` makes it null.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from memlab.dialogues.source import JsonReader, child
from memlab.errors import DatasetError
from memlab.messages import ROLES, Message, ToolCall


def parse_message(reader: JsonReader, raw: Any, where: str, **provenance: Any) -> Message:
    """One message dict, with every field the chat format defines checked for its type."""
    reader.expect(raw, dict, where)
    role = reader.get(raw, "role", str, where)
    if role not in ROLES:
        raise reader.error(child(where, "role"), f"unknown role {role!r}; expected one of {', '.join(ROLES)}")
    if "content" in raw:
        content = reader.expect(raw["content"], (str, list, type(None)), child(where, "content"))
        if isinstance(content, list):
            _check_parts(reader, content, child(where, "content"))
    reader.optional(raw, "name", str, where)
    calls = reader.optional(raw, "tool_calls", list, where) or []
    for i, call in enumerate(calls):
        at = child(child(where, "tool_calls"), i)
        reader.expect(call, dict, at)
        reader.get(call, "id", str, at)
        function = reader.get(call, "function", dict, at)
        reader.get(function, "name", str, child(at, "function"))
        reader.optional(function, "arguments", (str, dict), child(at, "function"))
    if role == "tool":
        reader.get(raw, "tool_call_id", str, where)
    elif calls and role != "assistant":
        raise reader.error(child(where, "tool_calls"), f"only assistant messages call tools, not {role!r}")
    return Message.from_openai(raw, **provenance)


def _check_parts(reader: JsonReader, parts: list[Any], where: str) -> None:
    """Multi-part content as OpenAI's API takes it: a non-empty list of part objects, a part's ``text`` a string.

    `Message.from_openai` joins the text parts; a part without text (an ``image_url``) is dropped, as memlab
    is text-only. A part that is no object would be dropped unseen, so it is refused. An empty list is refused
    too: OpenAI's API refuses it (a message without content has null), so no real log holds one.
    """
    if not parts:
        raise reader.error(where, "an empty list; expected a string or a non-empty list of content parts")
    for i, part in enumerate(parts):
        reader.expect(part, dict, child(where, i))
        if "text" in part:
            reader.expect(part["text"], str, child(child(where, i), "text"))


def check_tool_results(reader: JsonReader, messages: Sequence[Message], wheres: Sequence[str]) -> int:
    """Every tool result answers a call of the assistant message just before its run of results.

    Returns how many call ids were reused within the messages (tau-bench reuses ids across turns;
    pairing is by position, so that is legal, but strategies that pair by id alone should know).
    """
    open_calls: set[str] = set()
    seen: set[str] = set()
    reused = 0
    calls: Sequence[ToolCall] = ()  # the calls of the last message that was no tool result, at calls_at
    calls_at = ""
    for message, where in zip(messages, wheres, strict=True):
        if message.role == "tool":
            if message.tool_call_id not in open_calls:
                raise _no_call(reader, message.tool_call_id, where, open_calls, calls, calls_at)
            open_calls.discard(message.tool_call_id)
            continue
        calls_at, calls = where, message.tool_calls
        open_calls = {c.id for c in message.tool_calls}
        reused += sum(1 for c in message.tool_calls if c.id in seen)
        seen.update(open_calls)
    return reused


def _no_call(
    reader: JsonReader,
    call_id: str | None,
    where: str,
    open_calls: set[str],
    calls: Sequence[ToolCall],
    calls_at: str,
) -> DatasetError:
    """The error for a tool result at `where` that answers no pending call of the message at `calls_at`.

    If that message gave the id to two calls, the first result took it and this one finds none pending:
    the duplicate id is the mistake, so the error names it in the assistant message.
    """
    ids: list[str | None] = [c.id for c in calls]
    if ids.count(call_id) > 1:
        first = ids.index(call_id)
        return reader.error(
            child(child(child(calls_at, "tool_calls"), ids.index(call_id, first + 1)), "id"),
            f"{call_id!r} is also the id of tool_calls[{first}], so a result cannot say which of the two calls it "
            f"answers ({where} answers {call_id!r} again); one message's calls have distinct ids",
        )
    expected = ", ".join(sorted(open_calls)) or "none is pending"
    return reader.error(
        child(where, "tool_call_id"),
        f"{call_id!r} answers no tool call of the preceding assistant message (pending: {expected})",
    )
