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

from dataclasses import dataclass, field, make_dataclass
from typing import Any

from omegaconf import II

from memlab import ranges
from memlab.context import hook, sliding_window, summarize, summary, trim
from memlab.context.peers import autogen

PEERS = "memlab.context.peers"

INTERCEPTOR = "memlab.context.ContextEditingInterceptor"


@dataclass
class TrimConfig:
    _target_: str = "memlab.context.Trim"
    keep_first: int = ranges.count(trim.DEFAULT_KEEP_FIRST)
    keep_last: int = ranges.count(trim.DEFAULT_KEEP_LAST)
    placeholder: str | None = None


@dataclass
class SummarizeConfig:
    _target_: str = "memlab.context.Summarize"
    llm: Any = "${llm}"
    threshold: int = ranges.ranged(summarize.DEFAULT_THRESHOLD, ge=1)
    keep_last: int = ranges.count(summarize.DEFAULT_KEEP_LAST)
    max_conversation_chars: int = ranges.positive(summary.MAX_CONVERSATION_CHARS)
    language: str = "en"
    summary_tokens: int | None = ranges.positive(summary.DEFAULT_SUMMARY_TOKENS)
    counter: str = "estimate"


@dataclass
class SlidingWindowConfig:
    _target_: str = "memlab.context.SlidingWindow"
    max_tokens: int = ranges.positive(sliding_window.DEFAULT_MAX_TOKENS)
    counter: str = "estimate"
    keep_system: bool = True
    start_on: str | None = None
    end_on: str | None = None
    allow_partial: bool = False
    text_splitter: str = "lines"


@dataclass
class CompositeConfig:
    _target_: str = "memlab.context.Composite"
    strategies: list[Any] = field(default_factory=lambda: [SummarizeConfig(), SlidingWindowConfig()])


@dataclass
class ContextKnobs:
    """The knobs a sweep varies, at the same path whatever the strategy (None: no use for it)."""

    _target_: str = INTERCEPTOR
    max_tokens: int | None = ranges.positive(None)
    keep_first: int | None = ranges.count(None)
    keep_last: int | None = ranges.count(None)
    threshold: int | None = ranges.positive(None)


@dataclass
class NoneContextConfig(ContextKnobs):
    """`context=none`: no context component; a knob set for it is ignored."""

    _target_: str = "memlab.context.interceptor.NoContext"


@dataclass
class TrimContextConfig(ContextKnobs):
    """`context=trim`: `context.keep_first`, `context.keep_last`."""

    keep_first: int | None = ranges.count(trim.DEFAULT_KEEP_FIRST)
    keep_last: int | None = ranges.count(trim.DEFAULT_KEEP_LAST)
    strategy: TrimConfig = field(
        default_factory=lambda: TrimConfig(keep_first=II("..keep_first"), keep_last=II("..keep_last"))
    )


def _summarize_node(up: str) -> SummarizeConfig:
    """A SUMMARIZE node reading `threshold` and `keep_last` from the context node `up` levels above."""
    return SummarizeConfig(threshold=II(f"{up}threshold"), keep_last=II(f"{up}keep_last"))


@dataclass
class SummarizeContextConfig(ContextKnobs):
    """`context=summarize`: `context.threshold`, `context.keep_last`."""

    threshold: int | None = ranges.positive(summarize.DEFAULT_THRESHOLD)
    keep_last: int | None = ranges.count(summarize.DEFAULT_KEEP_LAST)
    strategy: SummarizeConfig = field(default_factory=lambda: _summarize_node(".."))


@dataclass
class SlidingWindowContextConfig(ContextKnobs):
    """`context=sliding_window`: `context.max_tokens`."""

    max_tokens: int | None = ranges.positive(sliding_window.DEFAULT_MAX_TOKENS)
    strategy: SlidingWindowConfig = field(default_factory=lambda: SlidingWindowConfig(max_tokens=II("..max_tokens")))


@dataclass
class CompositeContextConfig(ContextKnobs):
    """`context=composite`: SUMMARIZE's `context.threshold`, `context.keep_last`; the window's `context.max_tokens`."""

    max_tokens: int | None = ranges.positive(sliding_window.DEFAULT_MAX_TOKENS)
    threshold: int | None = ranges.positive(summarize.DEFAULT_THRESHOLD)
    keep_last: int | None = ranges.count(summarize.DEFAULT_KEEP_LAST)
    strategy: CompositeConfig = field(
        default_factory=lambda: CompositeConfig(
            strategies=[_summarize_node("...."), SlidingWindowConfig(max_tokens=II("....max_tokens"))]
        )
    )


@dataclass
class LangchainTrimConfig:
    _target_: str = f"{PEERS}.LangchainTrim"
    max_tokens: int = ranges.positive(sliding_window.DEFAULT_MAX_TOKENS)
    strategy: str = "last"
    token_counter: str = "exact"
    counter: str = "estimate"
    include_system: bool = True
    start_on: str | None = None
    end_on: str | None = None
    allow_partial: bool = False


@dataclass
class LlamaIndexBufferConfig:
    _target_: str = f"{PEERS}.LlamaIndexBuffer"
    max_tokens: int = ranges.positive(sliding_window.DEFAULT_MAX_TOKENS)
    counter: str = "estimate"
    keep_system: bool = True


@dataclass
class LlamaIndexSummaryConfig:
    _target_: str = f"{PEERS}.LlamaIndexSummary"
    llm: Any = "${llm}"
    max_tokens: int = ranges.positive(sliding_window.DEFAULT_MAX_TOKENS)
    counter: str = "estimate"
    keep_system: bool = True
    summary_tokens: int | None = ranges.positive(summary.DEFAULT_SUMMARY_TOKENS)


@dataclass
class AutogenHeadTailConfig:
    _target_: str = f"{PEERS}.AutogenHeadTail"
    head_size: int = ranges.positive(trim.DEFAULT_KEEP_FIRST)
    tail_size: int = ranges.positive(trim.DEFAULT_KEEP_LAST)


@dataclass
class AutogenBufferedConfig:
    _target_: str = f"{PEERS}.AutogenBuffered"
    buffer_size: int = ranges.positive(autogen.DEFAULT_BUFFER_SIZE)


@dataclass
class AutogenTokenLimitedConfig:
    _target_: str = f"{PEERS}.AutogenTokenLimited"
    max_tokens: int = ranges.positive(sliding_window.DEFAULT_MAX_TOKENS)
    counter: str = "estimate"


def _peer_entry(name: str, strategy: type) -> type:
    """`context=<name>`: the interceptor around one peer strategy node."""
    return make_dataclass(
        f"{strategy.__name__.removesuffix('Config')}ContextConfig",
        [("_target_", str, INTERCEPTOR), ("strategy", strategy, field(default_factory=strategy))],
    )


PEER_SCHEMAS: dict[str, type] = {
    "langchain_trim": LangchainTrimConfig,
    "llamaindex_buffer": LlamaIndexBufferConfig,
    "llamaindex_summary": LlamaIndexSummaryConfig,
    "autogen_head_tail": AutogenHeadTailConfig,
    "autogen_buffered": AutogenBufferedConfig,
    "autogen_token_limited": AutogenTokenLimitedConfig,
}


@dataclass
class SummarizationHookConfig:
    """`+hooks@hooks.summarization=summarization`."""

    _target_: str = "memlab.context.SummarizationHook"
    llm: Any = "${llm}"
    trigger_tokens: int = ranges.positive(hook.TRIGGER_TOKENS)
    counter: str = "estimate"
    keep_last: int = ranges.count(hook.DEFAULT_KEEP_LAST)
    keep_chars: int = ranges.count(hook.KEEP_CHARS)
    language: str = "en"
    max_conversation_chars: int = ranges.positive(summary.MAX_CONVERSATION_CHARS)
    summary_tokens: int | None = ranges.positive(summary.DEFAULT_SUMMARY_TOKENS)


SCHEMAS: dict[tuple[str, str], type] = {
    ("context", "none"): NoneContextConfig,
    ("context", "trim"): TrimContextConfig,
    ("context", "summarize"): SummarizeContextConfig,
    ("context", "sliding_window"): SlidingWindowContextConfig,
    ("context", "composite"): CompositeContextConfig,
    ("hooks", "summarization"): SummarizationHookConfig,
    **{("context", name): _peer_entry(name, node) for name, node in PEER_SCHEMAS.items()},
}
