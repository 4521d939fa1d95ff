"""Structured configs of the context group: strategy nodes, the entries around them, the summarization hook.

Each `conf/context/<name>.yaml` is a ContextEditingInterceptor whose `strategy` node comes from a
defaults entry (``- /schema/context_strategy/trim@strategy``), so it is typed and validated by
the strategy's own schema here. The parameters a sweep varies have one path for every entry
(`ContextKnobs`): ``context.max_tokens``, ``context.keep_first``, ``context.keep_last``,
``context.threshold``, ``context.counter``; the entry's YAML passes the ones its strategy has by
interpolation (``strategy: {keep_first: ${..keep_first}}``), so
``memlab run -m context=trim,sliding_window,composite context.max_tokens=1000,4000`` is one
sweep. A knob the entry's strategy has no use for is None by default, and a value set for it
is reported as ignored (`memlab.context.interceptor.ignored_knobs`). COMPOSITE's `strategies`
is a list of strategy nodes: its default holds typed SUMMARIZE and SLIDING_WINDOW nodes that
read the knobs of the entry around it; a list written by the user is not typed by Hydra and
each element is checked when the pipeline is built (`memlab.context.Composite`).

``context.counter`` (exact or estimate) reaches a strategy's `counter` through the
``memlab_counter`` resolver (`memlab.config`): exact is the run's `tokenizer`, what the reports
count. It defaults to the run's `budget_counter`: estimate, the design document's
``chars / 2.5 + 4`` (SLIDING_WINDOW's rule, and the SummarizationHook's ``estimateTokens``), as
the strategies' own defaults are; the lab's experiments (conf/experiment/) set exact so that a
budget of 2,000 sends about 2,000 of the tokens the reports count (the estimate sends 60% of it
on LoCoMo dev7: docs/context.md).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from omegaconf import II, MISSING

from memlab import ranges, summary
from memlab.context import hook, sliding_window, summarize, trim
from memlab.context.peers import autogen

PEERS = "memlab.context.peers"

INTERCEPTOR = "memlab.context.ContextEditingInterceptor"
# An entry's default `context.counter`: the run's (the YAML passes it on as ``${memlab_counter:${..counter}}``).
BUDGET_COUNTER = II("budget_counter")


@dataclass
class TrimConfig:
    """TRIM (design document): the first `keep_first` and the last `keep_last` messages."""

    _target_: str = "memlab.context.Trim"
    keep_first: int = ranges.count(trim.DEFAULT_KEEP_FIRST)
    """Messages kept from the start (the document's example: 2)."""
    keep_last: int = ranges.count(trim.DEFAULT_KEEP_LAST)
    """Newest messages kept (the document's example: 3)."""
    placeholder: str | None = None
    """A user message put where messages were cut, `{n}` their count (null: none)."""


@dataclass
class SummarizeConfig:
    """SUMMARIZE (design document): past `threshold` messages, one summary by `llm` plus the last `keep_last`."""

    _target_: str = "memlab.context.Summarize"
    llm: Any = "${llm}"
    """The model that writes the summary (null: the document's fallback, the first 3 messages)."""
    threshold: int = ranges.ranged(summarize.DEFAULT_THRESHOLD, ge=1)
    """Summarize once a request has more messages than this."""
    keep_last: int = ranges.count(summarize.DEFAULT_KEEP_LAST)
    """Newest messages kept verbatim after the summary."""
    max_conversation_chars: int = ranges.positive(summary.MAX_CONVERSATION_CHARS)
    """The transcript sent for a summary is cut to this many characters."""
    language: str = "en"
    """The summary prompt's language: en or zh."""
    summary_tokens: int | None = ranges.positive(summary.DEFAULT_SUMMARY_TOKENS)
    """The longest summary asked for, in tokens (null: no limit)."""
    counter: str = "estimate"
    """The token counter that checks a summary is not longer than what it replaces."""


@dataclass
class SlidingWindowConfig:
    """SLIDING_WINDOW (design document): the newest messages that fit `max_tokens`."""

    _target_: str = "memlab.context.SlidingWindow"
    max_tokens: int = ranges.positive(sliding_window.DEFAULT_MAX_TOKENS)
    """The token budget of the messages sent."""
    counter: str = "estimate"
    """How messages are counted: estimate (chars / 2.5 + 4, the document's), or a tiktoken encoding or model."""
    keep_system: bool = True
    """Keep the leading system messages and count them first (false: the document's bare walk)."""
    start_on: str | None = None
    """Drop the oldest kept units until the first starts with this role (null: off)."""
    end_on: str | None = None
    """Drop the newest messages until the last has this role, before counting (null: off)."""
    allow_partial: bool = False
    """Keep the fitting tail of the message the walk stopped at (plain messages only)."""
    text_splitter: str = "lines"
    """Where a partial message may be cut: lines, words or characters."""


def _knob(name: str) -> Any:
    """A COMPOSITE step's parameter read from the knob `name` of the context entry (list, node, entry: 4 dots)."""
    return II(f"....{name}")


STEP_COUNTER = "${memlab_counter:" + _knob("counter") + "}"


@dataclass
class CompositeConfig:
    """SUMMARIZE then SLIDING_WINDOW (the design document's default pipeline), reading the entry's knobs."""

    _target_: str = "memlab.context.Composite"
    strategies: list[Any] = field(
        default_factory=lambda: [
            SummarizeConfig(threshold=_knob("threshold"), keep_last=_knob("keep_last"), counter=STEP_COUNTER),
            SlidingWindowConfig(max_tokens=_knob("max_tokens"), counter=STEP_COUNTER),
        ]
    )
    """The strategy nodes applied in order (each with its own `_target_`)."""


@dataclass
class InterceptorConfig:
    """A ContextEditingInterceptor around the strategy node that the entry's defaults put at `strategy`."""

    _target_: str = INTERCEPTOR
    strategy: Any = MISSING
    """The strategy node, from the entry's defaults (`/schema/context_strategy/<name>@strategy`)."""


@dataclass
class ContextKnobs:
    """The knobs a sweep varies, at the same path whatever the strategy (None: no use for it)."""

    _target_: str = INTERCEPTOR
    max_tokens: int | None = ranges.positive(None)
    """The token budget, for strategies that have one (null: no use for it)."""
    keep_first: int | None = ranges.count(None)
    """Messages kept from the start, for strategies that keep a head."""
    keep_last: int | None = ranges.count(None)
    """Newest messages kept, for strategies that keep a tail."""
    threshold: int | None = ranges.positive(None)
    """Messages past which a strategy summarizes."""
    counter: str | None = None
    """How tokens are counted: exact (the run's tokenizer) or estimate (chars / 2.5 + 4); default: budget_counter."""
    strategy: Any = MISSING
    """The strategy node (last, so that a knob's error names the knob), from the entry's defaults."""


@dataclass
class NoneContextConfig(ContextKnobs):
    """`context=none`: no context component; a knob set for it is ignored."""

    _target_: str = "memlab.context.interceptor.NoContext"
    strategy: Any = None


@dataclass
class TrimContextConfig(ContextKnobs):
    """`context=trim` reads the knobs `context.keep_first` and `context.keep_last`."""

    keep_first: int | None = ranges.count(trim.DEFAULT_KEEP_FIRST)
    keep_last: int | None = ranges.count(trim.DEFAULT_KEEP_LAST)


@dataclass
class SummarizeContextConfig(ContextKnobs):
    """`context=summarize` reads `context.threshold`, `context.keep_last` and `context.counter` (its summary check)."""

    threshold: int | None = ranges.positive(summarize.DEFAULT_THRESHOLD)
    keep_last: int | None = ranges.count(summarize.DEFAULT_KEEP_LAST)
    counter: str | None = BUDGET_COUNTER


@dataclass
class SlidingWindowContextConfig(ContextKnobs):
    """`context=sliding_window` (and the peers with a token budget) reads `context.max_tokens` and `context.counter`."""

    max_tokens: int | None = ranges.positive(sliding_window.DEFAULT_MAX_TOKENS)
    counter: str | None = BUDGET_COUNTER


@dataclass
class CompositeContextConfig(SummarizeContextConfig):
    """`context=composite` reads `context.threshold`, `context.keep_last`, `context.max_tokens` and `context.counter`.

    SUMMARIZE's threshold and kept tail, the window's budget, and the counter of both steps.
    """

    max_tokens: int | None = ranges.positive(sliding_window.DEFAULT_MAX_TOKENS)


@dataclass
class LangchainTrimConfig:
    _target_: str = f"{PEERS}.LangchainTrim"
    max_tokens: int = ranges.positive(sliding_window.DEFAULT_MAX_TOKENS)
    """The token budget (langchain's max_tokens)."""
    strategy: str = "last"
    """first or last: which end of the conversation is kept."""
    token_counter: str = "exact"
    """exact (memlab's `counter`) or approximate (langchain's count_tokens_approximately)."""
    counter: str = "estimate"
    """The counter behind token_counter=exact."""
    include_system: bool = True
    """Keep the leading system message."""
    start_on: str | None = None
    """The kept messages start with this role (null: any)."""
    end_on: str | None = None
    """The kept messages end with this role (null: any)."""
    allow_partial: bool = False
    """Keep part of the message at the cut."""


@dataclass
class LlamaIndexBufferConfig:
    _target_: str = f"{PEERS}.LlamaIndexBuffer"
    max_tokens: int = ranges.positive(sliding_window.DEFAULT_MAX_TOKENS)
    """The token budget (llama-index's token_limit)."""
    counter: str = "estimate"
    """The counter llama-index's tokenizer_fn uses."""
    keep_system: bool = True
    """Keep the leading system messages out of the buffer, in front."""


@dataclass
class LlamaIndexSummaryConfig:
    _target_: str = f"{PEERS}.LlamaIndexSummary"
    llm: Any = "${llm}"
    """The model that writes llama-index's summary (null: none)."""
    max_tokens: int = ranges.positive(sliding_window.DEFAULT_MAX_TOKENS)
    """The token budget (llama-index's token_limit)."""
    counter: str = "estimate"
    """The counter llama-index's tokenizer_fn uses."""
    keep_system: bool = True
    """Keep the leading system messages out of the buffer, in front."""
    summary_tokens: int | None = ranges.positive(summary.DEFAULT_SUMMARY_TOKENS)
    """The longest summary asked for, in tokens (null: no limit)."""


@dataclass
class AutogenHeadTailConfig:
    _target_: str = f"{PEERS}.AutogenHeadTail"
    head_size: int = ranges.positive(trim.DEFAULT_KEEP_FIRST)
    """Messages kept from the start (autogen's head_size)."""
    tail_size: int = ranges.positive(trim.DEFAULT_KEEP_LAST)
    """Newest messages kept (autogen's tail_size)."""


@dataclass
class AutogenBufferedConfig:
    _target_: str = f"{PEERS}.AutogenBuffered"
    buffer_size: int = ranges.positive(autogen.DEFAULT_BUFFER_SIZE)
    """Newest messages kept (autogen's buffer_size)."""


@dataclass
class AutogenTokenLimitedConfig:
    _target_: str = f"{PEERS}.AutogenTokenLimited"
    max_tokens: int = ranges.positive(sliding_window.DEFAULT_MAX_TOKENS)
    """The token budget (autogen's token_limit)."""
    counter: str = "estimate"
    """The counter behind the token limit."""


@dataclass
class SummarizationHookConfig:
    """`+hooks@hooks.summarization=summarization`."""

    _target_: str = "memlab.context.SummarizationHook"
    llm: Any = "${llm}"
    """The model that compresses (null: the document's hard truncation)."""
    trigger_tokens: int = ranges.positive(hook.TRIGGER_TOKENS)
    """Compress when a request has more tokens than this (the document: 80,000)."""
    counter: str = "${memlab_counter:${budget_counter}}"
    """How the trigger counts tokens: the run's `budget_counter` (estimate: the document's chars / 2.5 + 4)."""
    keep_last: int = ranges.count(hook.DEFAULT_KEEP_LAST)
    """Newest messages (and their tool-call units) kept out of the compression."""
    keep_chars: int = ranges.count(hook.KEEP_CHARS)
    """Characters kept at each end of the text by the document's head-and-tail fallback."""
    language: str = "en"
    """The summary prompt's language: en or zh."""
    max_conversation_chars: int = ranges.positive(summary.MAX_CONVERSATION_CHARS)
    """The transcript sent for a summary is cut to this many characters."""
    summary_tokens: int | None = ranges.positive(summary.DEFAULT_SUMMARY_TOKENS)
    """The longest summary asked for, in tokens (null: no limit)."""


# Strategy nodes (group `context_strategy`, nested by the entries' defaults) and the entries.
PEER_STRATEGIES: dict[str, type] = {
    "langchain_trim": LangchainTrimConfig,
    "llamaindex_buffer": LlamaIndexBufferConfig,
    "llamaindex_summary": LlamaIndexSummaryConfig,
    "autogen_head_tail": AutogenHeadTailConfig,
    "autogen_buffered": AutogenBufferedConfig,
    "autogen_token_limited": AutogenTokenLimitedConfig,
}
BUDGETED_PEERS = ("langchain_trim", "llamaindex_buffer", "llamaindex_summary", "autogen_token_limited")
STRATEGIES: dict[str, type] = {
    "trim": TrimConfig,
    "summarize": SummarizeConfig,
    "sliding_window": SlidingWindowConfig,
    "composite": CompositeConfig,
    **PEER_STRATEGIES,
}
ENTRIES: dict[str, type] = {
    "none": NoneContextConfig,
    "trim": TrimContextConfig,
    "summarize": SummarizeContextConfig,
    "sliding_window": SlidingWindowContextConfig,
    "composite": CompositeContextConfig,
    **dict.fromkeys(PEER_STRATEGIES, InterceptorConfig),  # a peer entry's strategy node is all it has ...
    **dict.fromkeys(BUDGETED_PEERS, SlidingWindowContextConfig),  # ... but a budget, which is `context.max_tokens`
}
SCHEMAS: dict[tuple[str, str], type] = {
    **{("context_strategy", name): node for name, node in STRATEGIES.items()},
    **{("context", name): node for name, node in ENTRIES.items()},
    ("hooks", "summarization"): SummarizationHookConfig,
}
