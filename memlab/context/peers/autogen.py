"""`autogen_head_tail`, `autogen_buffered`, `autogen_token_limited`: autogen-core's chat-completion contexts.

autogen-core 0.7 ships `HeadAndTailChatCompletionContext` (the first `head_size` and last
`tail_size` messages with a "Skipped N messages." user message between),
`BufferedChatCompletionContext` (the last `buffer_size` messages) and
`TokenLimitedChatCompletionContext` (pops the middle message until the rest fits `token_limit`,
counted by a model client). Each call builds the context from the request, as an agent
holding the same history would, and reads `get_messages()`.

Conversion: an assistant message with tool calls becomes an `AssistantMessage` whose content
is the `FunctionCall`s (its text goes to `thought`); the tool results that follow it become one
`FunctionExecutionResultMessage`. What comes back is mapped to the very `Message`s it came
from. The token-limited context counts with `CountingClient`, a model client whose only job is
`count_tokens` with memlab's counter, so its `max_tokens` means what SLIDING_WINDOW's does.

>>> from memlab.messages import Message
>>> ms = [Message("user", str(i), id=str(i)) for i in range(6)]
>>> [m.content for m in AutogenHeadTail(head_size=1, tail_size=2).apply(ms)]
['0', 'Skipped 3 messages.', '4', '5']
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from memlab.context.base import check_count
from memlab.context.peers.base import drive, require
from memlab.context.sliding_window import DEFAULT_MAX_TOKENS
from memlab.context.trim import DEFAULT_KEEP_FIRST, DEFAULT_KEEP_LAST
from memlab.errors import MemlabError
from memlab.messages import Message, MessageLike, as_messages
from memlab.tokens import TokenCounter, resolve_counter

# Ours: AutoGen gives no default buffer; 20 messages is about LoCoMo's one session.
DEFAULT_BUFFER_SIZE = 20


class _Converter:
    """memlab messages -> AutoGen's `LLMMessage`s (a tool-result run becomes one message) and back."""

    def __init__(self, strategy: str) -> None:
        self.models = require("autogen_core.models", strategy)
        self.core = require("autogen_core", strategy)
        self._peer: dict[tuple[Message, ...], Any] = {}
        self.origin: dict[int, tuple[Message, ...]] = {}  # id(peer message) -> the messages it stands for

    def _convert(self, group: tuple[Message, ...]) -> Any:
        am, m = self.models, group[0]
        if m.role == "tool":
            results = [
                am.FunctionExecutionResult(content=t.text, name=t.name or "", call_id=t.tool_call_id or "")
                for t in group
            ]
            return am.FunctionExecutionResultMessage(content=results)
        if m.role == "system":
            return am.SystemMessage(content=m.text)
        if m.role == "user":
            return am.UserMessage(content=m.text, source=m.speaker or m.name or "user")
        source = m.speaker or m.name or "assistant"
        if m.tool_calls:
            calls = [self.core.FunctionCall(id=c.id, arguments=c.arguments, name=c.name) for c in m.tool_calls]
            return am.AssistantMessage(content=calls, thought=m.content, source=source)
        return am.AssistantMessage(content=m.text, source=source)

    def to_peer(self, messages: Sequence[Message]) -> list[Any]:
        out, i = [], 0
        while i < len(messages):
            end = i + 1
            if messages[i].role == "tool":
                while end < len(messages) and messages[end].role == "tool":
                    end += 1
            group = tuple(messages[i:end])
            peer = self._peer.get(group)
            if peer is None:
                peer = self._peer[group] = self._convert(group)
                self.origin[id(peer)] = group
            out.append(peer)
            i = end
        return out

    def back(self, peer_messages: Sequence[Any]) -> list[Message]:
        out: list[Message] = []
        for p in peer_messages:
            group = self.origin.get(id(p))
            out.extend(group if group is not None else (Message("user", str(p.content)),))  # the placeholder
        return out


class _Context:
    """Shared by the three: build the context from the request and read `get_messages()`."""

    name: str
    libraries = ("autogen-core",)  # recorded with their versions in the run's manifest

    def __init__(self) -> None:
        self._convert = _Converter(self.name)
        self._contexts = require("autogen_core.model_context", self.name)

    def _context(self, initial: list[Any]) -> Any:
        raise NotImplementedError

    def apply(self, messages: Sequence[MessageLike]) -> list[Message]:
        context = self._context(self._convert.to_peer(as_messages(messages)))
        return self._convert.back(drive(context.get_messages()))


def _positive(strategy: str, key: str, value: int) -> int:
    if check_count(key, value) == 0:
        raise MemlabError(f"context strategy {strategy}: {key}=0; AutoGen requires {key} >= 1")
    return value


class AutogenHeadTail(_Context):
    """`HeadAndTailChatCompletionContext(head_size, tail_size)`: TRIM's peer, with a placeholder."""

    name = "autogen_head_tail"

    def __init__(self, head_size: int = DEFAULT_KEEP_FIRST, tail_size: int = DEFAULT_KEEP_LAST) -> None:
        super().__init__()
        self.head_size = _positive(self.name, "head_size", head_size)
        self.tail_size = _positive(self.name, "tail_size", tail_size)

    def _context(self, initial: list[Any]) -> Any:
        return self._contexts.HeadAndTailChatCompletionContext(self.head_size, self.tail_size, initial_messages=initial)

    def __repr__(self) -> str:
        return f"AutogenHeadTail(head_size={self.head_size}, tail_size={self.tail_size})"


class AutogenBuffered(_Context):
    """`BufferedChatCompletionContext(buffer_size)`: the last messages by count."""

    name = "autogen_buffered"

    def __init__(self, buffer_size: int = DEFAULT_BUFFER_SIZE) -> None:
        super().__init__()
        self.buffer_size = _positive(self.name, "buffer_size", buffer_size)

    def _context(self, initial: list[Any]) -> Any:
        return self._contexts.BufferedChatCompletionContext(self.buffer_size, initial_messages=initial)

    def __repr__(self) -> str:
        return f"AutogenBuffered(buffer_size={self.buffer_size})"


def counting_client(counter: TokenCounter, converter: _Converter) -> Any:
    """An AutoGen `ChatCompletionClient` that only counts: `count_tokens` sums memlab's counts."""
    models = converter.models
    tokens: dict[int, int] = {}  # id(converted message) -> its tokens; the context re-counts on every pop

    def count(p: Any) -> int:
        n = tokens.get(id(p))
        if n is None:
            n = sum(map(counter.count, converter.back([p])))
            if id(p) in converter.origin:  # converted messages live as long as the converter
                tokens[id(p)] = n
        return n

    class CountingClient(models.ChatCompletionClient):  # type: ignore[name-defined]
        """Counts for `TokenLimitedChatCompletionContext`; it cannot complete (memlab replays, never calls)."""

        def count_tokens(self, messages: Sequence[Any], *, tools: Sequence[Any] = ()) -> int:
            return sum(map(count, messages))

        def remaining_tokens(self, messages: Sequence[Any], *, tools: Sequence[Any] = ()) -> int:
            raise MemlabError("autogen_token_limited always sets token_limit (max_tokens)")

        async def create(self, *args: Any, **kwargs: Any) -> Any:
            raise MemlabError("the counting client does not complete")

        def create_stream(self, *args: Any, **kwargs: Any) -> Any:
            raise MemlabError("the counting client does not complete")

        async def close(self) -> None:
            return None

        def actual_usage(self) -> Any:
            return models.RequestUsage(prompt_tokens=0, completion_tokens=0)

        total_usage = actual_usage

        @property
        def capabilities(self) -> Any:
            return self.model_info

        @property
        def model_info(self) -> Any:
            return {"vision": False, "function_calling": True, "json_output": False, "family": "unknown"}

    return CountingClient()


class AutogenTokenLimited(_Context):
    """`TokenLimitedChatCompletionContext(token_limit=max_tokens)`, counting with memlab's counter."""

    name = "autogen_token_limited"

    def __init__(self, max_tokens: int = DEFAULT_MAX_TOKENS, counter: str | TokenCounter = "estimate") -> None:
        super().__init__()
        self.max_tokens = _positive(self.name, "max_tokens", max_tokens)
        self.counter = resolve_counter(counter)
        self._client = counting_client(self.counter, self._convert)

    def _context(self, initial: list[Any]) -> Any:
        return self._contexts.TokenLimitedChatCompletionContext(
            self._client, token_limit=self.max_tokens, initial_messages=initial
        )

    def __repr__(self) -> str:
        return f"AutogenTokenLimited(max_tokens={self.max_tokens}, counter={self.counter.name!r})"
