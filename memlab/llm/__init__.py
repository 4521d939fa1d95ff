"""Chat-model backends behind one protocol: the offline extractive default, litellm, fault injection."""

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
    LLMUnavailable,
    RecordedChatModel,
    RunWideModel,
    run_wide_models,
)
from memlab.llm.extractive import ExtractiveChatModel
from memlab.llm.faulty import FAULT_MODES, FaultyChatModel
from memlab.llm.litellm_chat import LitellmChatModel
from memlab.llm.summarize import extractive_summary, first_sentences

__all__ = [
    "FAULT_MODES",
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
    "LLMUnavailable",
    "LitellmChatModel",
    "RecordedChatModel",
    "RunWideModel",
    "extractive_summary",
    "first_sentences",
    "prompts",
    "run_wide_models",
]
