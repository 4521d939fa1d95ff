"""The message and item model: OpenAI chat messages with provenance, and AgentMemory items.

Messages are frozen and hashable, so a strategy can never change its input and a token
counter can cache a count per distinct message. Everything converts to and from the
OpenAI chat format (plain dicts) that users' logs and provider APIs already use.

>>> m = Message.from_openai({"role": "user", "content": "hi"})
>>> m.to_openai()
{'role': 'user', 'content': 'hi'}
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any, Literal, TypeVar, overload

ROLES: tuple[str, ...] = ("system", "user", "assistant", "tool")


def naive(moment: datetime) -> datetime:
    """`moment` as naive UTC, the lab's one convention for times (naive times are taken as UTC already).

    Args:
        moment: A time, with or without an offset.

    >>> naive(datetime.fromisoformat("2024-05-01T09:30:00+02:00"))
    datetime.datetime(2024, 5, 1, 7, 30)
    """
    return moment.astimezone(UTC).replace(tzinfo=None) if moment.tzinfo else moment


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One function call requested by an assistant message (OpenAI `tool_calls[i]`)."""

    id: str
    name: str
    arguments: str = "{}"

    def to_openai(self) -> dict[str, Any]:
        return {"id": self.id, "type": "function", "function": {"name": self.name, "arguments": self.arguments}}

    @classmethod
    def from_openai(cls, raw: Mapping[str, Any]) -> ToolCall:
        fn = raw.get("function") or {}
        args = fn.get("arguments", "{}")
        if not isinstance(args, str):  # some logs store parsed arguments
            args = json.dumps(args, sort_keys=True, ensure_ascii=False)
        return cls(id=str(raw.get("id", "")), name=str(fn.get("name", "")), arguments=args)


# A message's `name` as OpenAI's chat completions endpoint accepts it (no whitespace nor any of <|\\/>).
_MESSAGE_NAME = re.compile(r"[^\s<|\\/>]+")


def tool_result(call: ToolCall, content: str) -> Message:
    """The tool message answering `call`, named after the tool when OpenAI accepts the name as a message's.

    A model may misname a tool ("memory save", ""): carried into the tool message, the name made the next
    request one OpenAI refuses (400), which ended the run; the message then goes without a name.
    """
    name = call.name if _MESSAGE_NAME.fullmatch(call.name) else None
    return Message(role="tool", content=content, tool_call_id=call.id, name=name)


@dataclass(frozen=True, slots=True)
class Message:
    """An OpenAI-format chat message plus where it came from.

    `id` is the stable id from the source (LoCoMo `dia_id` such as ``D3:7``, or a
    trajectory index), `speaker` the original speaker's name and `timestamp` the
    source's time, when it has one. Provenance fields never reach a provider.
    """

    role: str
    content: str | None = None
    name: str | None = None
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None
    id: str | None = None
    speaker: str | None = None
    timestamp: datetime | None = field(default=None, compare=False)
    _hash: int = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.role not in ROLES:
            raise ValueError(f"unknown message role {self.role!r}; expected one of {', '.join(ROLES)}")
        # Counters look messages up on every call; hash once instead of re-hashing every field each time.
        fields = (self.role, self.content, self.name, self.tool_calls, self.tool_call_id, self.id, self.speaker)
        object.__setattr__(self, "_hash", hash(fields))

    def __hash__(self) -> int:
        return self._hash

    def __reduce__(self) -> tuple[Any, ...]:
        # Unpickled through __init__, so the cached hash is the new process's (str hashes are salted per process).
        fields = (self.role, self.content, self.name, self.tool_calls, self.tool_call_id, self.id, self.speaker)
        return (Message, (*fields, self.timestamp))

    @property
    def text(self) -> str:
        """The content as text ("" when null)."""
        return self.content or ""

    def with_content(self, content: str | None) -> Message:
        return replace(self, content=content)

    def to_openai(self) -> dict[str, Any]:
        """The message as a provider would receive it (no provenance fields)."""
        out: dict[str, Any] = {"role": self.role, "content": self.content}
        if self.name is not None:
            out["name"] = self.name
        if self.tool_calls:
            out["tool_calls"] = [c.to_openai() for c in self.tool_calls]
        if self.tool_call_id is not None:
            out["tool_call_id"] = self.tool_call_id
        return out

    @classmethod
    def from_openai(cls, raw: Mapping[str, Any], **provenance: Any) -> Message:
        """Build from an OpenAI dict; null or the string "None" on a tool-call message is no content."""
        content = raw.get("content")
        calls = tuple(ToolCall.from_openai(c) for c in raw.get("tool_calls") or ())
        if isinstance(content, list):  # multi-part content: keep the text parts
            content = "".join(p.get("text", "") for p in content if isinstance(p, Mapping))
        if calls and content == "None":
            content = None
        if content is not None and not isinstance(content, str):
            content = str(content)
        return cls(
            role=str(raw.get("role")),
            content=content,
            name=raw.get("name"),
            tool_calls=calls,
            tool_call_id=raw.get("tool_call_id"),
            **provenance,
        )


MessageLike = Message | Mapping[str, Any]


def as_message(m: MessageLike) -> Message:
    """Accept a `Message` or an OpenAI dict."""
    return m if isinstance(m, Message) else Message.from_openai(m)


def as_messages(ms: Iterable[MessageLike]) -> list[Message]:
    # Strategies call this on every request: skip the per-item call for the usual list of Messages.
    return [m if type(m) is Message else as_message(m) for m in ms]


class MessageView(Sequence[Message]):
    """A read-only sequence of messages kept elsewhere: a subclass says how it reads one (`_at`) and a slice (`_part`).

    One `__getitem__` for the views (`LazyMessages`, `memlab.tokens.HistoryView`); a slice is a new list.
    """

    __slots__ = ()

    @overload
    def __getitem__(self, i: int) -> Message: ...

    @overload
    def __getitem__(self, i: slice) -> list[Message]: ...

    def __getitem__(self, i: int | slice) -> Message | list[Message]:
        return self._part(i) if isinstance(i, slice) else self._at(i)

    def _at(self, i: int) -> Message:
        raise NotImplementedError

    def _part(self, part: slice) -> list[Message]:
        raise NotImplementedError


class LazyMessages(MessageView):
    """A read-only view that converts OpenAI dicts to `Message`s only when an index is read.

    A strategy that reads a few messages of a long request (the ends) pays for those only.
    """

    def __init__(self, raw: Sequence[MessageLike]) -> None:
        self._raw = raw

    def __len__(self) -> int:
        return len(self._raw)

    def _at(self, i: int) -> Message:
        return as_message(self._raw[i])

    def _part(self, part: slice) -> list[Message]:
        return as_messages(self._raw[part])


def to_openai(ms: Iterable[Message]) -> list[dict[str, Any]]:
    return [m.to_openai() for m in ms]


S = TypeVar("S")
Apply = Callable[[S, Sequence[MessageLike]], list[Message]]


def dicts_in_dicts_out(apply: Apply[S]) -> Apply[S]:
    """Let a strategy's `apply` answer OpenAI dicts with OpenAI dicts.

    Given dicts (the first message decides), the strategy runs on `Message`s as usual and returns the caller's own
    dicts for the messages it kept (extra keys and multi-part content such as an ``image_url``
    part untouched) and `to_openai()` of those it made (a summary). Otherwise it returns
    `Message`s. (Typed as returning `Message`s; at run time the list holds dicts then.)
    """

    @functools.wraps(apply)
    def wrapper(self: S, messages: Sequence[MessageLike]) -> list[Message]:
        if not messages or not isinstance(messages[0], Mapping):
            return apply(self, messages)  # Messages: untouched, so a strategy may read only what it keeps
        converted = [as_message(m) for m in messages]
        originals = {id(m): raw for m, raw in zip(converted, messages, strict=True) if isinstance(raw, Mapping)}
        out = apply(self, converted)
        return [originals.get(id(m), m.to_openai()) for m in out]  # type: ignore[misc]

    return wrapper


def system(content: str) -> Message:
    return Message(role="system", content=content)


# --- AgentMemory items (second design document, "Memory item 的真实形态") ---------------
# Beyond the document, every item carries `source_id`: the id of the message it came from (None when it
# has none), so that what a compressor folds or keeps is known by source id, as for chat messages.
# Also beyond it, so that items rebuild the very messages they came from (the request a compressor that
# dropped nothing sends is the full history, token for token): a `function_call_output` keeps the tool
# message's ``name``, and a `function_call` says with ``joined`` that it belongs to the assistant message
# just before it (the text of a message that has both text and calls, or an earlier call of that message).
# ``name`` is written only when set. ``joined`` is written whenever known, ``false`` included: an item without
# it (the document's shape, a hand-made call, or one stored before the flag) is None, and such a call joins
# an earlier call of the same source, so a model output's parallel calls stay one message. Items stored
# before ``joined: false`` was written cannot be told from these: two call-only messages of one source in a
# row, stored then, still load as one message.


@dataclass(frozen=True, slots=True)
class MessageItem:
    """`type=message`: a user, system or assistant message."""

    role: str
    content: str
    type: Literal["message"] = "message"
    source_id: str | None = None


@dataclass(frozen=True, slots=True)
class FunctionCall:
    """`type=function_call`: the model asked for a tool."""

    call_id: str
    name: str
    arguments: str = "{}"
    type: Literal["function_call"] = "function_call"
    source_id: str | None = None
    joined: bool | None = None  # part of the assistant message before it; None: not said (see above)


@dataclass(frozen=True, slots=True)
class FunctionCallOutput:
    """`type=function_call_output`: a tool's result for `call_id`."""

    call_id: str
    output: str
    type: Literal["function_call_output"] = "function_call_output"
    source_id: str | None = None
    name: str | None = None  # the tool message's name (beyond the document, see above)


Item = MessageItem | FunctionCall | FunctionCallOutput


def item_to_dict(item: Item) -> dict[str, Any]:
    """The document's item dict, plus ``source_id``, ``joined`` and a tool output's ``name`` when the item has them
    (``joined`` when not None)."""
    if isinstance(item, MessageItem):
        out: dict[str, Any] = {"type": "message", "role": item.role, "content": item.content}
    elif isinstance(item, FunctionCall):
        out = {"type": "function_call", "call_id": item.call_id, "name": item.name, "arguments": item.arguments}
        if item.joined is not None:
            out["joined"] = item.joined
    else:
        out = {"type": "function_call_output", "call_id": item.call_id, "output": item.output}
        if item.name is not None:
            out["name"] = item.name
    if item.source_id is not None:
        out["source_id"] = item.source_id
    return out


def item_from_dict(raw: Mapping[str, Any]) -> Item:
    kind = raw.get("type", "message")
    source = raw.get("source_id")
    source_id = None if source is None else str(source)
    if kind == "message":
        return MessageItem(role=str(raw["role"]), content=str(raw.get("content") or ""), source_id=source_id)
    if kind == "function_call":
        return FunctionCall(
            call_id=str(raw["call_id"]),
            name=str(raw["name"]),
            arguments=str(raw.get("arguments", "{}")),
            source_id=source_id,
            joined=None if raw.get("joined") is None else bool(raw["joined"]),
        )
    if kind == "function_call_output":
        name = raw.get("name")
        return FunctionCallOutput(
            call_id=str(raw["call_id"]),
            output=str(raw.get("output", "")),
            source_id=source_id,
            name=None if name is None else str(name),
        )
    raise ValueError(f"unknown item type {kind!r}; expected message, function_call or function_call_output")


def messages_to_items(ms: Sequence[Message]) -> list[Item]:
    """Chat messages as AgentMemory items: tool calls and results become call items, each with its message's id.

    `items_to_messages` gives the messages back: a tool result keeps its ``name``, and the calls of an assistant
    message after its text, or after its first call, are ``joined`` to it (one message, not one per part), and
    the first call of a message with calls only is not (``joined`` False: it starts a message of its own).

    >>> m = Message("assistant", "Let me check.", tool_calls=(ToolCall("c1", "search"),), id="a1")
    >>> [type(i).__name__ for i in messages_to_items([m])], items_to_messages(messages_to_items([m])) == [m]
    (['MessageItem', 'FunctionCall'], True)
    """
    items: list[Item] = []
    for m in ms:
        if m.role == "tool":
            items.append(FunctionCallOutput(call_id=m.tool_call_id or "", output=m.text, source_id=m.id, name=m.name))
            continue
        text = m.role != "assistant" or bool(m.content) or not m.tool_calls
        if text:
            items.append(MessageItem(role=m.role, content=m.text, source_id=m.id))
        items.extend(
            FunctionCall(call_id=c.id, name=c.name, arguments=c.arguments, source_id=m.id, joined=text or i > 0)
            for i, c in enumerate(m.tool_calls)
        )
    return items


def items_to_messages(items: Sequence[Item]) -> list[Message]:
    """Items as chat messages with their source ids; a call joins the assistant message before it when it is
    ``joined`` to it, or, when it does not say (``joined`` None), follows another call of the same source."""
    out: list[Message] = []
    for it in items:
        if isinstance(it, FunctionCall):
            call = ToolCall(id=it.call_id, name=it.name, arguments=it.arguments)
            prev = out[-1] if out else None
            if (
                prev is not None
                and prev.role == "assistant"
                and prev.id == it.source_id
                and (it.joined or (it.joined is None and bool(prev.tool_calls)))
            ):
                out[-1] = replace(prev, tool_calls=(*prev.tool_calls, call))
            else:
                out.append(Message(role="assistant", content=None, tool_calls=(call,), id=it.source_id))
        elif isinstance(it, FunctionCallOutput):
            out.append(Message(role="tool", content=it.output, tool_call_id=it.call_id, id=it.source_id, name=it.name))
        else:
            out.append(Message(role=it.role, content=it.content, id=it.source_id))
    return out
