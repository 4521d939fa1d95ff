"""Structured configs of the `llm` group (validated by Hydra at start)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from memlab import ranges
from memlab.llm.base import DEFAULT_SUMMARY_TOKENS
from memlab.llm.faulty import DEFAULT_FAULT_RATE, FAULT_MODES


@dataclass
class ExtractiveConfig:
    """`llm=extractive`: deterministic and offline."""

    _target_: str = "memlab.llm.ExtractiveChatModel"
    counter: str = "${tokenizer}"
    summary_tokens: int = ranges.positive(DEFAULT_SUMMARY_TOKENS)


@dataclass
class LitellmConfig:
    """`llm=litellm`: any provider litellm speaks; responses cached on disk by request."""

    _target_: str = "memlab.llm.LitellmChatModel"
    model: str = "openai/gpt-4o-mini"
    api_base: str | None = None
    api_key_env: str | None = None
    temperature: float = ranges.ranged(0.0, ge=0, le=2)
    max_tokens: int = ranges.positive(512)
    timeout: float = ranges.positive(60.0)
    num_retries: int = ranges.count(2, le=100)
    retry_backoff_s: float = ranges.ranged(1.0, ge=0, le=3_600)
    max_retry_after_s: float = ranges.ranged(60.0, ge=0, le=3_600)
    """The longest Retry-After honoured."""
    cache_dir: str | None = "${oc.env:MEMLAB_CACHE,.memlab-cache}/llm"
    counter: str = "${tokenizer}"
    extra_params: dict[str, Any] = field(default_factory=dict)


@dataclass
class FaultyConfig:
    """`llm=faulty`: `inner` (composed from `conf/llm/`, default extractive) failing at `rate`."""

    _target_: str = "memlab.llm.FaultyChatModel"
    inner: Any = None
    rate: float = ranges.rate(DEFAULT_FAULT_RATE)
    modes: list[str] = field(default_factory=lambda: list(FAULT_MODES))
    seed: int = ranges.seed("${seed}")
    """The fault sequence's seed (the run's by default)."""
    counter: str = "${tokenizer}"


SCHEMAS = {
    ("llm", "extractive"): ExtractiveConfig,
    ("llm", "litellm"): LitellmConfig,
    ("llm", "faulty"): FaultyConfig,
}
