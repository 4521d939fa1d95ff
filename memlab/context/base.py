"""The `ContextStrategy` protocol: crop the request before an LLM call, never the stored history.

The first design document's Context layer is "a cropped photo; the original is untouched":
`apply` takes OpenAI-format messages (dicts or `Message`s) and returns a new list of
`Message`s, leaving its input as it was. Strategies report what they did only through
`memlab.trace.emit`, so their signatures stay pure.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from memlab.errors import MemlabError
from memlab.messages import Message, MessageLike


@runtime_checkable
class ContextStrategy(Protocol):
    """Anything with a `name` and `apply(messages) -> list[Message]` that returns a new list."""

    name: str

    def apply(self, messages: Sequence[MessageLike]) -> list[Message]: ...


# What a strategy node must build, for errors about one that does not.
STRATEGY_TARGETS = (
    "expected a class with a `name` and `apply(messages) -> list[Message]` (memlab.context.Trim, Summarize, "
    "SlidingWindow, Composite, or one of your own: docs/extending.md)"
)


def checked_output(out: object, who: str) -> list[Message]:
    """`out` if it is what a strategy's `apply` returns, a list of `Message`s; else a `MemlabError` naming `who`.

    Only its ends are looked at (constant time a call): a strategy of one's own that returns None, text,
    OpenAI dicts or a tuple fails here with its name, not later inside token counting.

    Args:
        out: What `apply` returned.
        who: The strategy, as the error names it (``context strategy 'mine' (Mine)``).
    """
    if isinstance(out, list) and (not out or (isinstance(out[0], Message) and isinstance(out[-1], Message))):
        return out
    if isinstance(out, list):
        wrong = out[-1] if isinstance(out[0], Message) else out[0]
        got = f"a list holding {type(wrong).__name__}"
    else:
        got = "None" if out is None else f"{type(out).__name__}"
    raise MemlabError(f"{who} returned {got}; apply(messages) must return a new list of memlab.messages.Message")


def leading_system(messages: Sequence[Message]) -> int:
    """How many system messages open the list (the agent's instructions)."""
    n = 0
    while n < len(messages) and messages[n].role == "system":
        n += 1
    return n


def check_count(name: str, value: int) -> int:
    """A message count from config: an int >= 0, or an error naming the key."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise MemlabError(f"context strategy: {name}={value!r} is not a message count; expected an integer >= 0")
    return value
