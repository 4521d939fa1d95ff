"""Chat-model backends behind one protocol: the offline extractive default, litellm, fault injection."""

from dataclasses import dataclass

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
    LLMError,
    LLMTimeout,
    RecordedChatModel,
)
from memlab.llm.extractive import ExtractiveChatModel


@dataclass
class ExtractiveConfig:
    """`llm=extractive`: deterministic and offline."""

    _target_: str = "memlab.llm.ExtractiveChatModel"
    counter: str = "${tokenizer}"
    summary_tokens: int = 256


SCHEMAS = {("llm", "extractive"): ExtractiveConfig}

__all__ = [
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
    "LLMError",
    "LLMTimeout",
    "RecordedChatModel",
    "prompts",
]
