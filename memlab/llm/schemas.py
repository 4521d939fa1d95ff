"""Structured configs of the `llm` group (validated by Hydra at start)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from memlab import ranges
from memlab.llm.base import DEFAULT_SUMMARY_TOKENS
from memlab.llm.faulty import DEFAULT_FAULT_RATE, FAULT_MODES
from memlab.llm.litellm_import import (
    DEFAULT_MAX_RETRY_AFTER_S,
    DEFAULT_NUM_RETRIES,
    DEFAULT_RETRY_BACKOFF_S,
    DEFAULT_TIMEOUT_S,
)


@dataclass
class ExtractiveConfig:
    """`llm=extractive`: deterministic and offline."""

    _target_: str = "memlab.llm.ExtractiveChatModel"
    counter: str = "${tokenizer}"
    """The token counter of its length budgets and of the usage it reports."""
    summary_tokens: int = ranges.positive(DEFAULT_SUMMARY_TOKENS)
    """The longest summary written, in tokens."""


@dataclass
class LitellmConfig:
    """`llm=litellm`: any provider litellm speaks; responses cached on disk by request."""

    _target_: str = "memlab.llm.LitellmChatModel"
    model: str = "openai/gpt-4o-mini"
    """litellm's provider/model name."""
    api_base: str | None = None
    """The provider's URL (null: litellm's default for the provider)."""
    api_key_env: str | None = None
    """The environment variable holding the key, read at each call (null: the provider's, e.g. OPENAI_API_KEY)."""
    temperature: float = ranges.ranged(0.0, ge=0, le=2)
    """Sampling temperature (0: the most deterministic)."""
    max_tokens: int = ranges.positive(512)
    """The longest reply, in tokens."""
    timeout: float = ranges.positive(DEFAULT_TIMEOUT_S)
    """Seconds a request may take."""
    num_retries: int = ranges.count(DEFAULT_NUM_RETRIES, le=100)
    """Retries of a failed request (rate limits, timeouts, server errors)."""
    retry_backoff_s: float = ranges.ranged(DEFAULT_RETRY_BACKOFF_S, ge=0, le=3_600)
    """Seconds before the first retry, doubled at each further one."""
    max_retry_after_s: float = ranges.ranged(DEFAULT_MAX_RETRY_AFTER_S, ge=0, le=3_600)
    """The longest Retry-After honoured."""
    cache_dir: str | None = "${oc.env:MEMLAB_CACHE,.memlab-cache}/llm"
    """Responses cached on disk by request (null: no cache)."""
    counter: str = "${tokenizer}"
    """Counts a call's tokens when the provider reports none."""
    extra_params: dict[str, Any] = field(default_factory=dict)
    """More keyword arguments for litellm.completion (none memlab passes itself: api_key, timeout, ...)."""
    headers_env: dict[str, str] = field(default_factory=dict)
    """Secret HTTP headers (a gateway's key): header name -> the environment variable read at each call."""
    seed: int = ranges.seed("${seed}")
    """The run's seed; above temperature 0, sent as the provider's seed and part of the cache key."""


@dataclass
class FaultyConfig:
    """`llm=faulty`: `inner` (composed from `conf/llm/`, default extractive) failing at `rate`."""

    _target_: str = "memlab.llm.FaultyChatModel"
    inner: Any = None
    """The model that answers when no fault is injected (a conf/llm entry; null: extractive)."""
    rate: float = ranges.rate(DEFAULT_FAULT_RATE)
    """Share of calls that fail."""
    modes: list[str] = field(default_factory=lambda: list(FAULT_MODES))
    """The failures drawn from (uniformly): error, timeout, empty, long."""
    seed: int = ranges.seed("${seed}")
    """The fault sequence's seed (the run's by default)."""
    counter: str = "${tokenizer}"
    """Counts the tokens of an injected fault's call."""


SCHEMAS = {
    ("llm", "extractive"): ExtractiveConfig,
    ("llm", "litellm"): LitellmConfig,
    ("llm", "faulty"): FaultyConfig,
}
