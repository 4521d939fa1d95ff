"""The `ChatModel` protocol every strategy talks to, and the recording every backend shares.

A strategy never knows which backend it got: the offline extractive default, litellm for
real providers, or a fault-injecting wrapper. `task` names what is asked (one of `TASKS`), so
the extractive backend can do the task from the very prompt a real model would read.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from memlab.errors import MemlabError
from memlab.messages import MessageLike, ToolCall
from memlab.trace import LLM_CALL, collecting, emit, timed

TASK_CHAT = "chat"
TASK_CONTEXT_SUMMARY = "context_summary"  # keep the conversation coherent (Context layer)
TASK_MEMORY_SUMMARY = "memory_summary"  # extract preferences, habits, durable facts (Memory layer)
TASK_EXTRACT_MEMORIES = "extract_memories"  # typed long-term memories with evidence ids
TASK_ANSWER = "answer"
TASK_JUDGE = "judge"
TASKS = (TASK_CHAT, TASK_CONTEXT_SUMMARY, TASK_MEMORY_SUMMARY, TASK_EXTRACT_MEMORIES, TASK_ANSWER, TASK_JUDGE)
# Ours: the design document sets no length for a summary; every summarizer asks for at most this many tokens.
DEFAULT_SUMMARY_TOKENS = 256


class LLMError(RuntimeError):
    """A model call failed (provider error, timeout, unusable output); strategies fall back on it."""


class LLMTimeout(LLMError):
    """A model call took longer than its timeout."""


class LLMAuthError(MemlabError):
    """The provider refused or lacks the credentials: no call can succeed, so the run stops (not a fallback)."""


@dataclass(frozen=True)
class Completion:
    """A model's answer and what it cost.

    Args:
        text: The model's reply.
        prompt_tokens: Tokens the request cost, as the provider (or the counter) reports.
        completion_tokens: Tokens of the reply.
        model: The model that answered.
        cached: Whether a cache answered (no request sent).
        tool_calls: The tool calls the model made.
        truncated: The reply stopped at the token budget (finish_reason ``length``), so it may end mid-sentence.
    """

    text: str
    prompt_tokens: int
    completion_tokens: int
    model: str
    cached: bool = False
    tool_calls: tuple[ToolCall, ...] = ()  # the tools the model asked for (tool calling), in order
    truncated: bool = False


@runtime_checkable
class ChatModel(Protocol):
    """Anything that completes a chat: `complete(messages, task=..., max_tokens=...) -> Completion`."""

    name: str

    def complete(
        self, messages: Sequence[MessageLike], *, task: str = TASK_CHAT, max_tokens: int | None = None, **params: Any
    ) -> Completion: ...


class RecordedChatModel:
    """Base for backends: `complete` validates the task and emits one LLM_CALL event per call."""

    name = "model"

    def complete(
        self, messages: Sequence[MessageLike], *, task: str = TASK_CHAT, max_tokens: int | None = None, **params: Any
    ) -> Completion:
        if task not in TASKS:
            raise ValueError(f"unknown task {task!r}; expected one of {', '.join(TASKS)}")
        failure: Exception | None = None
        result: Completion | None = None
        with timed() as t:
            try:
                result = self._complete(messages, task=task, max_tokens=max_tokens, **params)
            except Exception as e:
                failure = e
        emit(
            LLM_CALL,
            backend=self.name,
            model=result.model if result else None,
            task=task,
            prompt_tokens=result.prompt_tokens if result else 0,
            completion_tokens=result.completion_tokens if result else 0,
            cached=bool(result and result.cached),
            truncated=bool(result and result.truncated),
            failed=failure is not None,
            error=type(failure).__name__ if failure else None,
            latency_us=t["us"],
        )
        if failure is not None:
            raise failure
        assert result is not None
        return result

    def _complete(
        self, messages: Sequence[MessageLike], *, task: str, max_tokens: int | None, **params: Any
    ) -> Completion:
        raise NotImplementedError


class RunWideModel(Protocol):
    """A model whose state spans the run (`run_wide_state`: llm=faulty's random draws), which a checkpoint carries."""

    run_wide_state: bool

    def checkpoint(self) -> dict[str, Any]:
        """The state a replay stopped at a session boundary carries to the process that resumes it."""
        ...

    def restore(self, state: dict[str, Any]) -> None:
        """Take back what `checkpoint` returned."""
        ...


_BUILT: ContextVar[list[RunWideModel] | None] = ContextVar("memlab_run_wide_models", default=None)


def run_wide_models() -> AbstractContextManager[list[RunWideModel]]:
    """The run-wide models built inside the block (each config node that names one builds its own), in the order
    built: a stopped replay saves their states in that order and the resume, building the same, restores them."""
    return collecting(_BUILT)


def built_run_wide(model: RunWideModel) -> None:
    """Note `model` for the `run_wide_models` block it is built in (none: nothing to note)."""
    built = _BUILT.get()
    if built is not None:
        built.append(model)
