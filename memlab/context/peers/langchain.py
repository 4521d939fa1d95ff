"""`langchain_trim`: langchain-core's `trim_messages` as a context strategy.

Options are langchain's own (`strategy` first|last, `max_tokens`, `include_system`, `start_on`,
`end_on`, `allow_partial`); roles are memlab's names (user, assistant, system, tool).
`token_counter`: ``exact`` counts with memlab's `counter` (the same numbers as SLIDING_WINDOW),
``approximate`` with langchain's `count_tokens_approximately`. langchain-core before the
tool-group fix (1.8.3 and earlier) can send a tool result without its call; that shows in
``context.tool_orphans``.

>>> from memlab.messages import Message
>>> ms = [Message("system", "rules", id="s"), *(Message("user", "x" * 25, id=str(i)) for i in range(4))]
>>> [m.id for m in LangchainTrim(max_tokens=35).apply(ms)]  # 6 + 14 + 14 estimated tokens
['s', '2', '3']
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from memlab.context.base import check_count
from memlab.context.peers.base import Keys, require
from memlab.context.sliding_window import DEFAULT_MAX_TOKENS, check_roles
from memlab.errors import MemlabError
from memlab.messages import Message, MessageLike, ToolCall, as_messages
from memlab.tokens import TokenCounter, resolve_counter

# memlab role -> langchain message type name (`start_on` / `end_on` values).
LANGCHAIN_TYPES = {"system": "system", "user": "human", "assistant": "ai", "tool": "tool"}
TOKEN_COUNTERS = ("exact", "approximate")


def _arguments(raw: str) -> dict[str, Any]:
    """A tool call's JSON arguments as the dict langchain wants (non-JSON kept under one key)."""
    try:
        parsed = json.loads(raw or "{}")
    except json.JSONDecodeError:
        return {"__arguments__": raw}
    return parsed if isinstance(parsed, dict) else {"__arguments__": raw}


def to_langchain(m: Message, key: str) -> Any:
    """A memlab message as langchain-core's message type, `id` set to `key`."""
    lc = require("langchain_core.messages", "langchain_trim")
    if m.role == "system":
        return lc.SystemMessage(content=m.text, id=key)
    if m.role == "user":
        return lc.HumanMessage(content=m.text, name=m.name, id=key)
    if m.role == "tool":
        return lc.ToolMessage(content=m.text, tool_call_id=m.tool_call_id or "", name=m.name, id=key)
    calls = [{"name": c.name, "args": _arguments(c.arguments), "id": c.id, "type": "tool_call"} for c in m.tool_calls]
    return lc.AIMessage(content=m.text, name=m.name, tool_calls=calls, id=key)


def from_langchain(obj: Any) -> Message:
    """A langchain message memlab did not give (only content, role and calls are known)."""
    role = {"human": "user", "ai": "assistant"}.get(obj.type, obj.type)
    text = obj.content if isinstance(obj.content, str) else "".join(str(getattr(obj, "text", "")))
    calls = tuple(ToolCall(c["id"] or "", c["name"], json.dumps(c["args"])) for c in getattr(obj, "tool_calls", ()))
    return Message(role, text, tool_calls=calls, tool_call_id=getattr(obj, "tool_call_id", None))


class LangchainTrim:
    """`trim_messages` from langchain-core, on memlab messages and memlab's token counts."""

    name = "langchain_trim"
    libraries = ("langchain-core",)  # recorded with their versions in the run's manifest

    def __init__(
        self,
        max_tokens: int = DEFAULT_MAX_TOKENS,
        strategy: str = "last",
        token_counter: str = "exact",
        counter: str | TokenCounter = "estimate",
        include_system: bool = True,
        start_on: str | None = None,
        end_on: str | None = None,
        allow_partial: bool = False,
    ) -> None:
        self._utils = require("langchain_core.messages.utils", self.name)
        if strategy not in ("first", "last"):
            raise MemlabError(f"context strategy {self.name}: strategy={strategy!r}; expected first or last")
        if token_counter not in TOKEN_COUNTERS:
            raise MemlabError(
                f"context strategy {self.name}: token_counter={token_counter!r}; expected exact or approximate"
            )
        self.max_tokens = check_count("max_tokens", max_tokens)
        self.strategy = strategy
        self.token_counter = token_counter
        self.counter = resolve_counter(counter)
        self.include_system = include_system and strategy == "last"  # langchain allows it only with "last"
        self.start_on = [LANGCHAIN_TYPES[r] for r in sorted(check_roles("start_on", start_on))] or None
        self.end_on = [LANGCHAIN_TYPES[r] for r in sorted(check_roles("end_on", end_on))] or None
        self.allow_partial = allow_partial
        self._keys: Keys[Any] = Keys(to_langchain)

    def _back(self, obj: Any) -> Message:
        """The memlab message for a langchain one: the original, or a copy with the cut content (allow_partial)."""
        m = self._keys.message(obj.id)
        if m is None:
            return from_langchain(obj)
        if obj is self._keys.peer(m):
            return m
        return m.with_content(obj.content if isinstance(obj.content, str) else m.text)

    def apply(self, messages: Sequence[MessageLike]) -> list[Message]:
        ms = as_messages(messages)
        lc = [self._keys.peer(m) for m in ms]
        count = self.counter.count
        tokens = {id(p): count(m) for p, m in zip(lc, ms, strict=True)}  # this request's messages, counted once

        def token_counter(some: Sequence[Any]) -> int:  # a partial message (allow_partial) is counted as cut
            return sum(tokens[id(p)] if id(p) in tokens else count(self._back(p)) for p in some)

        out = self._utils.trim_messages(
            lc,
            max_tokens=self.max_tokens,
            token_counter=token_counter if self.token_counter == "exact" else "approximate",
            strategy=self.strategy,
            include_system=self.include_system,
            start_on=self.start_on,
            end_on=self.end_on,
            allow_partial=self.allow_partial,
        )
        return [self._back(m) for m in out]

    def __repr__(self) -> str:
        return f"LangchainTrim(max_tokens={self.max_tokens}, strategy={self.strategy!r}, {self.token_counter})"
