"""The `ChatModel` protocol every strategy talks to, and the recording every backend shares.

A strategy never knows which backend it got: the offline extractive default, litellm for
real providers, or a fault-injecting wrapper. `task` names what is asked (one of `TASKS`), so
the extractive backend can do the task from the very prompt a real model would read.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Sequence
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
# A failed call's message as its LLM_CALL event keeps it (and run.log shows it): one line, at most this long.
FAILURE_MESSAGE_CHARS = 200
# litellm's words for a 200 reply it could not read (malformed JSON, a stream, an HTML page), which it reports as
# a 500 (its openai handler): the same request gets the same reply, so it is not retried, and it is labelled 200.
_INVALID_RESPONSE = ("empty or invalid response from llm endpoint", "received response - <apiresponse [200")
INVALID_RESPONSE = "InvalidResponse"
# What a key looks like in a provider's message (OpenAI's and Anthropic's ``sk-...``, a bearer token), masked even
# when no variable of this process holds it; and the environment variables whose values are masked wherever seen.
_KEY_SHAPES = re.compile(r"\b(sk-)[A-Za-z0-9_-]{6,}|\b(Bearer\s+)\S+", re.IGNORECASE)
_SECRET_NAMES = re.compile(r"KEY|TOKEN|SECRET|PASSWORD", re.IGNORECASE)
_MIN_SECRET_CHARS = 8  # shorter values ("none", "1") would mask ordinary words


class LLMError(RuntimeError):
    """A model call failed (provider error, timeout, unusable output); strategies fall back on it.

    Args:
        message: What failed, one line.
        attempts: The requests the call sent (1 + its retries), as its LLM_CALL event records them.
        billed: What the provider billed for a reply the call could not use (``choices: []`` with ``usage``, a tool
            call no tool was offered for), so that its tokens and cost are counted; None when it billed nothing.
    """

    def __init__(self, message: str, *, attempts: int = 1, billed: Completion | None = None) -> None:
        super().__init__(message)
        self.attempts = attempts
        self.billed = billed


class LLMTimeout(LLMError):
    """A model call took longer than its timeout.

    Args:
        message: What failed, one line.
        attempts: The requests the call sent.
        billed: What the provider billed for it (None: nothing).
    """


def one_line(text: str, limit: int = FAILURE_MESSAGE_CHARS) -> str:
    """`text` on one line (whitespace runs as one space), cut to `limit` characters with ``...``."""
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def redact(text: str, secrets: Iterable[str] = ()) -> str:
    """`text` with API keys masked: `secrets`, the values of the environment's key-like variables (``*KEY*``,
    ``*TOKEN*``, ...) and anything shaped like a key (``sk-...``, ``Bearer ...``), so no log line or record
    repeats a key that a provider's error message echoed."""
    values = {v for v in secrets if v and len(v) >= _MIN_SECRET_CHARS}
    values |= {v for k, v in os.environ.items() if _SECRET_NAMES.search(k) and len(v) >= _MIN_SECRET_CHARS}
    for value in sorted(values, key=len, reverse=True):
        text = text.replace(value, "***")
    return _KEY_SHAPES.sub(lambda m: f"{m.group(1) or m.group(2)}***", text)


def invalid_response(error: BaseException) -> bool:
    """Whether `error` is litellm's report of a 200 reply it could not read (see `_INVALID_RESPONSE`)."""
    text = str(error).lower()
    return any(words in text for words in _INVALID_RESPONSE)


def failure_reason(error: BaseException, secrets: Iterable[str] = ()) -> dict[str, Any]:
    """Why a call failed, as its LLM_CALL event records it, so a run can say which calls failed and why.

    `cause`: the provider's error class when the backend's error wraps one (litellm's ``InternalServerError``,
    ``RateLimitError``, ...), else the error's own class; `status`: its HTTP status (None without one). A 200 reply
    litellm could not read, which it reports as a 500, is ``InvalidResponse`` with status 200 (`invalid_response`);
    `message`: its message, one line, at most `FAILURE_MESSAGE_CHARS`, keys masked (`redact`).

    Args:
        error: What the call raised.
        secrets: Keys to mask besides those `redact` finds itself.
    """
    source = error.__cause__ if isinstance(error.__cause__, Exception) else error
    unreadable = invalid_response(source)
    status = 200 if unreadable else getattr(source, "status_code", None)
    return {
        "cause": INVALID_RESPONSE if unreadable else type(source).__name__,
        "status": status if isinstance(status, int) and not isinstance(status, bool) else None,
        "message": one_line(redact(str(source) or type(source).__name__, secrets)),
    }


def failure_label(error: BaseException) -> str:
    """A failed call's reason in a few words, its provider error class and HTTP status: ``RateLimitError (429)``."""
    reason = failure_reason(error)
    return f"{reason['cause']} ({reason['status']})" if reason["status"] is not None else str(reason["cause"])


class LLMAuthError(MemlabError):
    """The provider refused or lacks the credentials: no call can succeed, so the run stops (not a fallback)."""


class LLMUnavailable(MemlabError):
    """A model that has not answered once in the run cannot be reached (no server at its URL) or is not served
    there (HTTP 404): every chat call would fall back and measure nothing, so the run stops (not a fallback)."""


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
        attempts: The requests sent for it (1 + the retries; 0 when a cache answered).
    """

    text: str
    prompt_tokens: int
    completion_tokens: int
    model: str
    cached: bool = False
    tool_calls: tuple[ToolCall, ...] = ()  # the tools the model asked for (tool calling), in order
    truncated: bool = False
    attempts: int = 1


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
        billed = result or getattr(failure, "billed", None)  # a failed call's billed reply is counted too
        emit(
            LLM_CALL,
            backend=self.name,
            model=billed.model if billed else None,
            task=task,
            prompt_tokens=billed.prompt_tokens if billed else 0,
            completion_tokens=billed.completion_tokens if billed else 0,
            cached=bool(result and result.cached),
            truncated=bool(result and result.truncated),
            attempts=result.attempts if result else int(getattr(failure, "attempts", 1)),
            failed=failure is not None,
            error=type(failure).__name__ if failure else None,
            **(failure_reason(failure, self._secrets()) if failure else dict.fromkeys(("cause", "status", "message"))),
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

    def _secrets(self) -> tuple[str, ...]:
        """Keys this backend holds that a failure's recorded message must not repeat (besides `redact`'s own)."""
        return ()


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
