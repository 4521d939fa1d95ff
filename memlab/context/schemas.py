"""Structured configs of the context group's entries and of the summarization hook.

Each `conf/context/<name>.yaml` is a ContextEditingInterceptor with a typed `strategy` node.
The parameters a sweep varies have one path for every entry (`ContextKnobs`):
``context.max_tokens``, ``context.keep_first``, ``context.keep_last``, ``context.threshold``;
each entry's strategy node reads the ones it has by interpolation, so
``memlab run -m context=trim,sliding_window,composite context.max_tokens=1000,4000`` is one
sweep. A knob the entry's strategy has no use for is None by default, and a value set for
it is reported as ignored (`ContextEditingInterceptor.ignored`). COMPOSITE's `strategies` is
a list of strategy nodes: its default holds typed SUMMARIZE and SLIDING_WINDOW nodes; a list
written by the user is not typed by Hydra and each element is checked when the pipeline is
built (`memlab.context.Composite`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from omegaconf import II

from memlab.context import hook, sliding_window, summarize, summary, trim

INTERCEPTOR = "memlab.context.ContextEditingInterceptor"


@dataclass
class TrimConfig:
    _target_: str = "memlab.context.Trim"
    keep_first: int = trim.DEFAULT_KEEP_FIRST
    keep_last: int = trim.DEFAULT_KEEP_LAST


@dataclass
class SummarizeConfig:
    _target_: str = "memlab.context.Summarize"
    llm: Any = "${llm}"
    threshold: int = summarize.DEFAULT_THRESHOLD
    keep_last: int = summarize.DEFAULT_KEEP_LAST
    max_conversation_chars: int = summary.MAX_CONVERSATION_CHARS
    language: str = "en"
    summary_tokens: int | None = summary.DEFAULT_SUMMARY_TOKENS
    counter: str = "estimate"


@dataclass
class SlidingWindowConfig:
    _target_: str = "memlab.context.SlidingWindow"
    max_tokens: int = sliding_window.DEFAULT_MAX_TOKENS
    counter: str = "estimate"
    keep_system: bool = True


@dataclass
class CompositeConfig:
    _target_: str = "memlab.context.Composite"
    strategies: list[Any] = field(default_factory=lambda: [SummarizeConfig(), SlidingWindowConfig()])


@dataclass
class ContextKnobs:
    """The knobs a sweep varies, at the same path whatever the strategy (None: no use for it)."""

    _target_: str = INTERCEPTOR
    max_tokens: int | None = None
    keep_first: int | None = None
    keep_last: int | None = None
    threshold: int | None = None


@dataclass
class NoneContextConfig(ContextKnobs):
    """`context=none`: no context component; a knob set for it is ignored."""

    _target_: str = "memlab.context.interceptor.NoContext"


@dataclass
class TrimContextConfig(ContextKnobs):
    """`context=trim`: `context.keep_first`, `context.keep_last`."""

    keep_first: int | None = trim.DEFAULT_KEEP_FIRST
    keep_last: int | None = trim.DEFAULT_KEEP_LAST
    strategy: TrimConfig = field(
        default_factory=lambda: TrimConfig(keep_first=II("..keep_first"), keep_last=II("..keep_last"))
    )


def _summarize_node(up: str) -> SummarizeConfig:
    """A SUMMARIZE node reading `threshold` and `keep_last` from the context node `up` levels above."""
    return SummarizeConfig(threshold=II(f"{up}threshold"), keep_last=II(f"{up}keep_last"))


@dataclass
class SummarizeContextConfig(ContextKnobs):
    """`context=summarize`: `context.threshold`, `context.keep_last`."""

    threshold: int | None = summarize.DEFAULT_THRESHOLD
    keep_last: int | None = summarize.DEFAULT_KEEP_LAST
    strategy: SummarizeConfig = field(default_factory=lambda: _summarize_node(".."))


@dataclass
class SlidingWindowContextConfig(ContextKnobs):
    """`context=sliding_window`: `context.max_tokens`."""

    max_tokens: int | None = sliding_window.DEFAULT_MAX_TOKENS
    strategy: SlidingWindowConfig = field(default_factory=lambda: SlidingWindowConfig(max_tokens=II("..max_tokens")))


@dataclass
class CompositeContextConfig(ContextKnobs):
    """`context=composite`: SUMMARIZE's `context.threshold`, `context.keep_last`; the window's `context.max_tokens`."""

    max_tokens: int | None = sliding_window.DEFAULT_MAX_TOKENS
    threshold: int | None = summarize.DEFAULT_THRESHOLD
    keep_last: int | None = summarize.DEFAULT_KEEP_LAST
    strategy: CompositeConfig = field(
        default_factory=lambda: CompositeConfig(
            strategies=[_summarize_node("...."), SlidingWindowConfig(max_tokens=II("....max_tokens"))]
        )
    )


@dataclass
class SummarizationHookConfig:
    """`+hooks@hooks.summarization=summarization`."""

    _target_: str = "memlab.context.SummarizationHook"
    llm: Any = "${llm}"
    trigger_tokens: int = hook.TRIGGER_TOKENS
    counter: str = "estimate"
    keep_last: int = hook.DEFAULT_KEEP_LAST
    keep_chars: int = hook.KEEP_CHARS
    language: str = "en"
    max_conversation_chars: int = summary.MAX_CONVERSATION_CHARS
    summary_tokens: int | None = summary.DEFAULT_SUMMARY_TOKENS


SCHEMAS: dict[tuple[str, str], type] = {
    ("context", "none"): NoneContextConfig,
    ("context", "trim"): TrimContextConfig,
    ("context", "summarize"): SummarizeContextConfig,
    ("context", "sliding_window"): SlidingWindowContextConfig,
    ("context", "composite"): CompositeContextConfig,
    ("hooks", "summarization"): SummarizationHookConfig,
}
