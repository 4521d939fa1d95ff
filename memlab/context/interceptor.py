"""ContextEditingInterceptor: the request-pipeline stage at order 30 that applies a strategy.

Design document: ContextEditingInterceptor sits at order 30 of the interceptor chain, takes
the current messages, calls ContextEngineeringService.apply() and replaces them with the
cropped ones; the stored history is never touched. Each call reports one CONTEXT_APPLY event
with what the strategy did (messages and tokens in and out, the tool-call orphans it sends,
and its time in microseconds).


The interceptor also receives the entry's sweep knobs (`context.max_tokens`, ...; see
`memlab.context.schemas`): the config has already passed them to the strategy. Which of them a
strategy has no use for is read from the config alone (`ignored_knobs`), for the run's manifest,
and so is the token budget the strategy was given (`configured_budget`), for the reports.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from omegaconf import DictConfig, ListConfig

from memlab.context.base import STRATEGY_TARGETS, ContextStrategy, checked_output
from memlab.errors import MemlabError
from memlab.messages import Message
from memlab.runtime import ORDER_CONTEXT_EDITING, CallContext, Component, RequestStage
from memlab.tokens import TokenCounter, get_counter, request_tokens
from memlab.trace import CONTEXT_APPLY, emit, timed
from memlab.units import orphans

STAGE = "context_editing"
# The sweep knobs every context entry has (`context.max_tokens`, ...; memlab.context.schemas.ContextKnobs).
KNOBS = ("max_tokens", "keep_first", "keep_last", "threshold", "counter")


def request_counter(ctx: CallContext) -> TokenCounter:
    """The run's counter, or the design document's estimate when the caller gave none."""
    return ctx.counter if ctx.counter is not None else get_counter("estimate")


class ContextEditingInterceptor(Component):
    """A `Component` that is its own request stage: crops every request with `strategy`.

    The keyword arguments are the entry's sweep knobs, which the config has already passed to
    `strategy`; they are accepted so that one config node holds both (see `ignored_knobs`).

    Parameters: the fields of the context entries' schemas, each documented there once:
    `memlab.context.schemas.InterceptorConfig` and its subclasses (`TrimContextConfig`,
    `SummarizeContextConfig`, `SlidingWindowContextConfig`, `CompositeContextConfig`).
    """

    order = ORDER_CONTEXT_EDITING

    def __init__(
        self,
        strategy: ContextStrategy,
        *,
        max_tokens: int | None = None,
        keep_first: int | None = None,
        keep_last: int | None = None,
        threshold: int | None = None,
        counter: str | None = None,
    ) -> None:
        if not isinstance(strategy, ContextStrategy):
            raise MemlabError(
                f"context.strategy built {type(strategy).__name__!r}, which is not a context strategy; "
                + STRATEGY_TARGETS
            )
        self.strategy = strategy
        self._who = f"context strategy {strategy.name!r} ({type(strategy).__name__})"

    def stages(self) -> Sequence[RequestStage]:
        return [self]

    def process(self, messages: Sequence[Message], ctx: CallContext) -> list[Message]:
        with timed() as t:
            out = checked_output(self.strategy.apply(messages), self._who)
        counter = request_counter(ctx)
        emit(
            CONTEXT_APPLY,
            stage=STAGE,
            strategy=self.strategy.name,
            messages_in=len(messages),
            messages_out=len(out),
            tokens_in=request_tokens(counter, messages),
            tokens_out=request_tokens(counter, out),
            tool_orphans=len(orphans(out)),
            # a turn to answer came in and none went out (a budget below the system messages' tokens)
            no_turn=bool(messages) and messages[-1].role != "system" and all(m.role == "system" for m in out),
            latency_us=t["us"],
        )
        return out

    def __repr__(self) -> str:
        return f"ContextEditingInterceptor({self.strategy!r})"


class NoContext(Component):
    """`context=none`: no context editing; takes the sweep knobs (all ignored) so that a sweep such as
    ``-m context=none,trim context.keep_last=5`` composes for every entry."""

    def __init__(self, **knobs: int | None) -> None:
        pass


def ignored_knobs(node: Any) -> dict[str, Any]:
    """The knobs set on a composed context entry that its strategy node has no parameter for.

    Read from the config without building anything (a peer strategy would import its library):
    a knob is used when the `strategy` node, or a step of COMPOSITE's `strategies`, has a parameter
    of that name (a value given to the parameter itself, ``context.strategy.max_tokens=2000``,
    takes the knob's place: not a knob ignored); `context=none` has no strategy and uses none.
    """
    steps = _steps(node.get("strategy"))
    return {
        f"context.{name}": node[name]
        for name in KNOBS
        if node.get(name) is not None and not any(name in step for step in steps)
    }


def _steps(strategy: Any) -> list[Any]:
    """The strategy node, or the step nodes of a pipeline's `strategies` (none for `context=none`)."""
    if not isinstance(strategy, DictConfig | dict):
        return []
    steps = strategy.get("strategies")
    if isinstance(steps, ListConfig | list):
        return [s for step in steps for s in _steps(step)]
    return [strategy]


def configured_budget(node: Any) -> tuple[int, str] | None:
    """(max_tokens, counter spec) of a context entry's budgeted strategy, or of COMPOSITE's last budgeted step.

    Read from the config (resolved: the counter is "estimate" or the run's tokenizer); None without a budget.
    """
    budgeted = [s for s in _steps(node.get("strategy") if node else None) if s.get("max_tokens") is not None]
    if not budgeted:
        return None
    return int(budgeted[-1]["max_tokens"]), str(budgeted[-1].get("counter", "estimate"))
