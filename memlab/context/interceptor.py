"""ContextEditingInterceptor: the request-pipeline stage at order 30 that applies a strategy.

Design document: ContextEditingInterceptor sits at order 30 of the interceptor chain, takes
the current messages, calls ContextEngineeringService.apply() and replaces them with the
cropped ones; the stored history is never touched. Each call reports one CONTEXT_APPLY event
with what the strategy did (messages and tokens in and out, the tool-call orphans it sends,
and its time in microseconds).
"""

from __future__ import annotations

from collections.abc import Sequence

from memlab.context.base import STRATEGY_TARGETS, ContextStrategy
from memlab.context.units import orphans
from memlab.errors import MemlabError
from memlab.messages import Message
from memlab.runtime import ORDER_CONTEXT_EDITING, CallContext, Component, RequestStage
from memlab.tokens import TokenCounter, get_counter
from memlab.trace import CONTEXT_APPLY, emit, timed

STAGE = "context_editing"


def request_counter(ctx: CallContext) -> TokenCounter:
    """The run's counter, or the design document's estimate when the caller gave none."""
    return ctx.counter if ctx.counter is not None else get_counter("estimate")


def _tokens(counter: TokenCounter, messages: list[Message]) -> int:
    """Sum of per-message counts; memlab's counters add cached counts at C speed (`count_messages`)."""
    total = getattr(counter, "count_messages", None)
    return int(total(messages)) if total is not None else sum(map(counter.count, messages))


class ContextEditingInterceptor(Component):
    """A `Component` that is its own request stage: crops every request with `strategy`."""

    order = ORDER_CONTEXT_EDITING

    def __init__(self, strategy: ContextStrategy) -> None:
        if not isinstance(strategy, ContextStrategy):
            raise MemlabError(
                f"context.strategy built {type(strategy).__name__!r}, which is not a context strategy; "
                + STRATEGY_TARGETS
            )
        self.strategy = strategy

    def stages(self) -> Sequence[RequestStage]:
        return [self]

    def process(self, messages: list[Message], ctx: CallContext) -> list[Message]:
        with timed() as t:
            out = self.strategy.apply(messages)
        counter = request_counter(ctx)
        emit(
            CONTEXT_APPLY,
            stage=STAGE,
            strategy=self.strategy.name,
            messages_in=len(messages),
            messages_out=len(out),
            tokens_in=_tokens(counter, messages),
            tokens_out=_tokens(counter, out),
            tool_orphans=len(orphans(out)),
            latency_us=t["us"],
        )
        return out

    def __repr__(self) -> str:
        return f"ContextEditingInterceptor({self.strategy!r})"
