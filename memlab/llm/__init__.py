"""Chat-model backends behind one protocol: the offline extractive default, litellm, fault injection."""

from dataclasses import dataclass, field
from typing import Any

from memlab import ranges
from memlab.llm import prompts
from memlab.llm.base import (
    TASK_ANSWER,
    TASK_CHAT,
    TASK_CONTEXT_SUMMARY,
    TASK_EXTRACT_MEMORIES,
    TASK_JUDGE,
    TASK_MEMORY_SUMMARY,
    TASKS,
    ChatModel,
    Completion,
    LLMAuthError,
    LLMError,
    LLMTimeout,
    RecordedChatModel,
)
from memlab.llm.extractive import DEFAULT_SUMMARY_TOKENS, ExtractiveChatModel
from memlab.llm.faulty import DEFAULT_FAULT_RATE, FAULT_MODES, FaultyChatModel
from memlab.llm.litellm_chat import LitellmChatModel
from memlab.llm.summarize import extractive_summary, first_sentences


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
    max_retry_after_s: float = ranges.ranged(60.0, ge=0, le=3_600)  # the longest Retry-After honoured
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
    seed: int = ranges.seed("${seed}")  # resolved by OmegaConf
    counter: str = "${tokenizer}"


SCHEMAS = {
    ("llm", "extractive"): ExtractiveConfig,
    ("llm", "litellm"): LitellmConfig,
    ("llm", "faulty"): FaultyConfig,
}

__all__ = [
    "FAULT_MODES",
    "SCHEMAS",
    "TASKS",
    "TASK_ANSWER",
    "TASK_CHAT",
    "TASK_CONTEXT_SUMMARY",
    "TASK_EXTRACT_MEMORIES",
    "TASK_JUDGE",
    "TASK_MEMORY_SUMMARY",
    "ChatModel",
    "Completion",
    "ExtractiveChatModel",
    "FaultyChatModel",
    "LLMAuthError",
    "LLMError",
    "LLMTimeout",
    "LitellmChatModel",
    "RecordedChatModel",
    "extractive_summary",
    "first_sentences",
    "prompts",
]
