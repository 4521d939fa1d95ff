"""TRIM: keep the first `keep_first` and the last `keep_last` messages, drop the middle.

Design document, Context layer TRIM: [1..10] with keepFirst = 2, keepLast = 3 gives
[1, 2, 8, 9, 10]; zero LLM calls. Beyond the document: a cut that falls inside a tool-call
unit moves outward to take the whole unit (see `memlab.units`), so TRIM may keep a
few more messages than asked but never sends a tool result without its call. `placeholder`
(off by default) puts a user message such as AutoGen's "Skipped {n} messages." where the
middle was, so the model knows that something is missing; `{n}` is the number of messages dropped.

>>> from memlab.messages import Message
>>> out = Trim(keep_first=2, keep_last=3).apply([Message("user", str(i)) for i in range(1, 11)])
>>> [m.content for m in out]
['1', '2', '8', '9', '10']
>>> [m.content for m in Trim(1, 1, placeholder="Skipped {n} messages.").apply(out)]
['1', 'Skipped 3 messages.', '10']
"""

from __future__ import annotations

from collections.abc import Sequence

from memlab.context.base import check_count
from memlab.messages import LazyMessages, Message, MessageLike, dicts_in_dicts_out
from memlab.units import unit_end_at, unit_start_at

# The document's worked example (keepFirst = 2, keepLast = 3).
DEFAULT_KEEP_FIRST = 2
DEFAULT_KEEP_LAST = 3


class Trim:
    """Keep the opening (system instructions, the first exchange) and the most recent turns.

    Args:
        keep_first: Opening messages kept (the design document's TRIM default).
        keep_last: Newest messages kept.
        placeholder: A user message put where messages were cut, ``{n}`` their count (None: none).
    """

    name = "trim"

    def __init__(
        self, keep_first: int = DEFAULT_KEEP_FIRST, keep_last: int = DEFAULT_KEEP_LAST, placeholder: str | None = None
    ) -> None:
        self.keep_first = check_count("keep_first", keep_first)
        self.keep_last = check_count("keep_last", keep_last)
        self.placeholder = placeholder

    @dicts_in_dicts_out
    def apply(self, messages: Sequence[MessageLike]) -> list[Message]:
        ms = LazyMessages(messages)  # reads the ends only: a call costs the same on a long history
        n = len(ms)
        if n <= self.keep_first + self.keep_last:
            return ms[:]
        head_end = unit_end_at(ms, self.keep_first - 1) if self.keep_first else 0
        tail_start = unit_start_at(ms, n - self.keep_last) if self.keep_last else n
        if head_end >= tail_start:
            return ms[:]
        if self.placeholder is None:
            return ms[:head_end] + ms[tail_start:]
        note = Message("user", self.placeholder.replace("{n}", str(tail_start - head_end)))
        return [*ms[:head_end], note, *ms[tail_start:]]

    def __repr__(self) -> str:
        return f"Trim(keep_first={self.keep_first}, keep_last={self.keep_last})"
