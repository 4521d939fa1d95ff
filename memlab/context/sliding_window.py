"""SLIDING_WINDOW: the newest messages that fit a token budget.

Design document, Context layer SLIDING_WINDOW: walk back from the newest message adding
each one's tokens (estimate: chars / 2.5 + 4 per message) and stop at the first message
that no longer fits. Beyond the document:

- `keep_system` (default true) keeps the leading system messages and counts them against the
  budget first, as langchain-core's ``trim_messages(strategy="last", include_system=True)``
  does (with several leading system messages memlab keeps them all, langchain only the first);
  ``keep_system=False`` is the document's bare algorithm.
- the walk steps over whole tool-call units (`memlab.context.units`): a call and its results
  fit together or the walk stops before them.
- each call costs O(messages kept): messages are read lazily from the end and their counts
  come from the counter's per-message cache, so a growing history is never re-tokenized.

>>> from memlab.messages import Message
>>> ms = [Message("user", "x" * 25) for _ in range(5)]  # 14 tokens each by the estimate
>>> len(SlidingWindow(max_tokens=30).apply(ms))
2
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import overload

from memlab.context.base import check_count
from memlab.context.units import unit_start_at
from memlab.messages import Message, MessageLike, as_message, dicts_in_dicts_out
from memlab.tokens import TokenCounter, resolve_counter

# Ours: the document gives no default budget (its worked example uses 1,000 tokens); 4,000
# holds a tau-bench airline policy (about 2,500 estimated tokens) plus the recent turns.
DEFAULT_MAX_TOKENS = 4_000


class _Lazy(Sequence[Message]):
    """A read-only view that converts OpenAI dicts to `Message`s only when an index is read."""

    def __init__(self, raw: Sequence[MessageLike]) -> None:
        self._raw = raw

    def __len__(self) -> int:
        return len(self._raw)

    @overload
    def __getitem__(self, i: int) -> Message: ...

    @overload
    def __getitem__(self, i: slice) -> list[Message]: ...

    def __getitem__(self, i: int | slice) -> Message | list[Message]:
        if isinstance(i, slice):
            return [as_message(m) for m in self._raw[i]]
        return as_message(self._raw[i])


class SlidingWindow:
    """Keep the newest messages whose tokens sum to at most `max_tokens`."""

    name = "sliding_window"

    def __init__(
        self, max_tokens: int = DEFAULT_MAX_TOKENS, counter: str | TokenCounter = "estimate", keep_system: bool = True
    ) -> None:
        self.max_tokens = check_count("max_tokens", max_tokens)
        self.counter = resolve_counter(counter)
        self.keep_system = keep_system

    @dicts_in_dicts_out
    def apply(self, messages: Sequence[MessageLike]) -> list[Message]:
        raw = messages if isinstance(messages, Sequence) else list(messages)
        n, count = len(raw), self.counter.count
        head: list[Message] = []
        if self.keep_system:
            while len(head) < n and (first := as_message(raw[len(head)])).role == "system":
                head.append(first)
        budget = max(0, self.max_tokens - sum(map(count, head)))
        kept: list[Message] = []  # newest first
        i, used = n, 0
        while i > len(head):  # a unit never reaches into the head: system messages are not calls
            m = as_message(raw[i - 1])
            if m.role != "tool":  # the common case: a unit of one message
                used += count(m)
                if used > budget:
                    break
                kept.append(m)
                i -= 1
                continue
            view = _Lazy(raw)
            start = unit_start_at(view, i - 1)
            unit = view[start:i]
            used += sum(map(count, unit))
            if used > budget:
                break
            kept.extend(reversed(unit))
            i = start
        kept.reverse()
        return head + kept

    def __repr__(self) -> str:
        keep = f"keep_system={self.keep_system}"
        return f"SlidingWindow(max_tokens={self.max_tokens}, counter={self.counter.name!r}, {keep})"
