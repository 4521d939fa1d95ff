"""SLIDING_WINDOW: the newest messages that fit a token budget.

Design document, Context layer SLIDING_WINDOW: walk back from the newest message adding
each one's tokens (estimate: chars / 2.5 + 4 per message) and stop at the first message
that no longer fits. Beyond the document:

- `keep_system` (default true) keeps the leading system messages and counts them against the
  budget first, as langchain-core's ``trim_messages(strategy="last", include_system=True)``
  does (with several leading system messages memlab keeps them all, langchain only the first);
  ``keep_system=False`` is the document's bare algorithm.
- the walk steps over whole tool-call units (`memlab.units`): a call and its results
  fit together or the walk stops before them.
- each call costs O(messages kept): messages are read lazily from the end and their counts
  come from the counter's per-message cache, so a growing history is never re-tokenized.
- three of langchain's options, each off by default so the document's walk stays the default:
  `end_on` drops the newest messages until the last one has that role (before counting),
  `start_on` drops the oldest kept units until the first one starts with that role, and
  `allow_partial` keeps the tail of the message the walk stopped at, cut at `text_splitter`
  boundaries (lines, words or characters), when it is a plain message (never a tool-call unit).

>>> from memlab.messages import Message
>>> ms = [Message("user", "x" * 25) for _ in range(5)]  # 14 tokens each by the estimate
>>> len(SlidingWindow(max_tokens=30).apply(ms))
2
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from memlab.context.base import check_count
from memlab.errors import MemlabError
from memlab.messages import ROLES, LazyMessages, Message, MessageLike, as_message, dicts_in_dicts_out
from memlab.tokens import TokenCounter, resolve_counter
from memlab.units import unit_start_at

# Ours: the document gives no default budget (its worked example uses 1,000 tokens); 4,000
# holds a tau-bench airline policy (about 2,500 estimated tokens) plus the recent turns.
DEFAULT_MAX_TOKENS = 4_000


def split_lines(text: str) -> list[str]:
    """Lines with their newline kept (langchain-core's default `text_splitter`)."""
    parts = text.split("\n")
    return [p + "\n" for p in parts[:-1]] + parts[-1:]


def split_words(text: str) -> list[str]:
    """Space-separated words with their space kept."""
    parts = text.split(" ")
    return [p + " " for p in parts[:-1]] + parts[-1:]


TEXT_SPLITTERS: dict[str, Callable[[str], list[str]]] = {"lines": split_lines, "words": split_words, "chars": list}


def check_roles(name: str, roles: str | Sequence[str] | None) -> frozenset[str]:
    """A role or list of roles from config (empty: the option is off), or an error naming the key."""
    if roles is None:
        return frozenset()
    chosen = frozenset([roles] if isinstance(roles, str) else roles)
    if not chosen <= set(ROLES):
        raise MemlabError(f"context strategy: {name}={roles!r}; expected null or roles among {', '.join(ROLES)}")
    return chosen


class SlidingWindow:
    """Keep the newest messages that fit in `max_tokens`, after the leading system messages.

    With ``keep_system=False`` the kept messages' tokens sum to at most `max_tokens`. With
    `keep_system` (the default) the leading system messages are always kept and counted first, so
    when they alone exceed `max_tokens` they are all that is kept, and the result is over the budget
    (instructions are never dropped; see the module docstring).

    Args:
        max_tokens: The token budget of the messages sent.
        counter: How messages are counted: ``estimate`` (chars / 2.5 + 4, the document's), a tiktoken
            encoding or model name, or a `TokenCounter`.
        keep_system: Keep the leading system messages, even over the budget, and count them first (False: the
            document's bare walk).
        start_on: Drop the oldest kept units until the first starts with this role (None: off).
        end_on: Drop the newest messages until the last has this role, before counting (None: off).
        allow_partial: Keep the fitting tail of the message the walk stopped at (plain messages only).
        text_splitter: Where a partial message may be cut: ``lines``, ``words``, ``characters``, or a function.
    """

    name = "sliding_window"

    def __init__(
        self,
        max_tokens: int = DEFAULT_MAX_TOKENS,
        counter: str | TokenCounter = "estimate",
        keep_system: bool = True,
        start_on: str | Sequence[str] | None = None,
        end_on: str | Sequence[str] | None = None,
        allow_partial: bool = False,
        text_splitter: str | Callable[[str], list[str]] = "lines",
    ) -> None:
        self.max_tokens = check_count("max_tokens", max_tokens)
        self.counter = resolve_counter(counter)
        self.keep_system = keep_system
        self.start_on = check_roles("start_on", start_on)
        self.end_on = check_roles("end_on", end_on)
        self.allow_partial = allow_partial
        if isinstance(text_splitter, str) and text_splitter not in TEXT_SPLITTERS:
            raise MemlabError(
                f"context strategy: text_splitter={text_splitter!r}; expected one of {', '.join(TEXT_SPLITTERS)}"
            )
        self.text_splitter = TEXT_SPLITTERS[text_splitter] if isinstance(text_splitter, str) else text_splitter

    @dicts_in_dicts_out
    def apply(self, messages: Sequence[MessageLike]) -> list[Message]:
        raw = messages if isinstance(messages, Sequence) else list(messages)
        n, count = len(raw), self.counter.count
        head: list[Message] = []
        if self.keep_system:
            while len(head) < n and (first := as_message(raw[len(head)])).role == "system":
                head.append(first)
        if self.end_on:
            while n > len(head) and as_message(raw[n - 1]).role not in self.end_on:
                n -= 1
        budget = max(0, self.max_tokens - sum(map(count, head)))
        kept: list[Message] = []  # newest first
        i, used = n, 0
        while i > len(head):  # a unit never reaches into the head: system messages are not calls
            m = as_message(raw[i - 1])
            if m.role != "tool":  # the common case: a unit of one message
                if used + count(m) > budget:
                    if self.allow_partial and not m.tool_calls:
                        kept.extend(self._partial(m, budget - used))
                    break
                used += count(m)
                kept.append(m)
                i -= 1
                continue
            view = LazyMessages(raw)
            start = unit_start_at(view, i - 1)
            unit = view[start:i]
            used += sum(map(count, unit))
            if used > budget:
                break
            kept.extend(reversed(unit))
            i = start
        if self.start_on:
            kept = self._drop_until_start(kept)
        kept.reverse()
        return head + kept

    def _partial(self, m: Message, room: int) -> list[Message]:
        """The longest tail of `m`'s text pieces that fits `room` tokens, as a copy of `m` (or nothing)."""
        pieces = self.text_splitter(m.text)[::-1]
        lo, hi = 0, len(pieces)
        while lo < hi:  # binary search on the number of pieces, as langchain-core does
            mid = (lo + hi + 1) // 2
            if self.counter.count(m.with_content("".join(pieces[:mid][::-1]))) <= room:
                lo = mid
            else:
                hi = mid - 1
        return [m.with_content("".join(pieces[:lo][::-1]))] if lo and m.text else []

    def _drop_until_start(self, kept: list[Message]) -> list[Message]:
        """Drop the oldest kept units (`kept` is newest first) until the oldest starts with a `start_on` role."""
        oldest_first = kept[::-1]
        start = 0
        while start < len(oldest_first) and oldest_first[start].role not in self.start_on:
            end = start + 1
            while end < len(oldest_first) and oldest_first[end].role == "tool":  # a call's results go with it
                end += 1
            start = end
        return oldest_first[start:][::-1]

    def __repr__(self) -> str:
        keep = f"keep_system={self.keep_system}"
        return f"SlidingWindow(max_tokens={self.max_tokens}, counter={self.counter.name!r}, {keep})"
