"""Structured configs of the context group's entries and of the summarization hook.

Each `conf/context/<name>.yaml` is a ContextEditingInterceptor with a typed `strategy` node,
so an override such as ``context.strategy.max_tokens=2000`` is checked against the
strategy's schema. COMPOSITE's `strategies` is a list of strategy nodes: its default holds
typed SUMMARIZE and SLIDING_WINDOW nodes; a list written by the user is not typed by Hydra
and each element is checked when the pipeline is built (`memlab.context.Composite`).
"""

from __future__ import annotations

from dataclasses import dataclass, field, make_dataclass
from typing import Any

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
class TrimContextConfig:
    """`context=trim`."""

    _target_: str = INTERCEPTOR
    strategy: TrimConfig = field(default_factory=TrimConfig)


@dataclass
class SummarizeContextConfig:
    """`context=summarize`."""

    _target_: str = INTERCEPTOR
    strategy: SummarizeConfig = field(default_factory=SummarizeConfig)


@dataclass
class SlidingWindowContextConfig:
    """`context=sliding_window`."""

    _target_: str = INTERCEPTOR
    strategy: SlidingWindowConfig = field(default_factory=SlidingWindowConfig)


@dataclass
class CompositeContextConfig:
    """`context=composite`."""

    _target_: str = INTERCEPTOR
    strategy: CompositeConfig = field(default_factory=CompositeConfig)


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
    ("context", "trim"): TrimContextConfig,
    ("context", "summarize"): SummarizeContextConfig,
    ("context", "sliding_window"): SlidingWindowContextConfig,
    ("context", "composite"): CompositeContextConfig,
    ("hooks", "summarization"): SummarizationHookConfig,
    **{("context", name): _peer_entry(name, node) for name, node in PEER_SCHEMAS.items()},
}
