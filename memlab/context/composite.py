"""COMPOSITE: a pipeline of strategies run in order; by default SUMMARIZE then SLIDING_WINDOW.

Design document, Context layer COMPOSITE: "先压缩数量 再控制 token 总量" (first reduce the
number of messages, then bound the total tokens). Each element is checked when the pipeline
is built, so a wrong entry in ``context.strategy.strategies`` fails at start, naming its index.

>>> from memlab.context import SlidingWindow, Trim
>>> Composite([Trim(keep_first=1, keep_last=4), SlidingWindow(max_tokens=100)]).name
'composite'
"""

from __future__ import annotations

from collections.abc import Sequence

from memlab.context.base import STRATEGY_TARGETS, ContextStrategy
from memlab.context.sliding_window import SlidingWindow
from memlab.context.summarize import Summarize
from memlab.errors import MemlabError
from memlab.messages import Message, MessageLike, as_messages, dicts_in_dicts_out


def default_pipeline() -> list[ContextStrategy]:
    """The document's default pipeline with the offline extractive model."""
    from memlab.llm import ExtractiveChatModel

    return [Summarize(llm=ExtractiveChatModel()), SlidingWindow()]


class Composite:
    """Run each strategy on the output of the one before.

    Parameters: the fields of `memlab.context.schemas.CompositeConfig`, each documented there once.
    """

    name = "composite"

    def __init__(self, strategies: Sequence[ContextStrategy] | None = None) -> None:
        steps = default_pipeline() if strategies is None else list(strategies)
        for i, step in enumerate(steps):
            if not isinstance(step, ContextStrategy):
                raise MemlabError(
                    f"context.strategy.strategies[{i}] built {type(step).__name__!r}, which is not a context strategy; "
                    + STRATEGY_TARGETS
                )
        self.strategies = steps

    @dicts_in_dicts_out
    def apply(self, messages: Sequence[MessageLike]) -> list[Message]:
        if not self.strategies:
            return as_messages(messages)
        first, *rest = self.strategies
        out = first.apply(messages)  # the first step reads the request as given (a history's is not copied)
        for step in rest:
            out = step.apply(out)
        return out

    def __repr__(self) -> str:
        return f"Composite({self.strategies!r})"
