"""Folding messages into one summary message with a chat model, and judging the result.

Shared by SUMMARIZE and the SummarizationHook. The text to summarize is the transcript of
the messages (`memlab.llm.prompts.render_transcript`), cut to `max_conversation_chars` so
that the summary call itself cannot overflow (design document: MAX_CONVERSATION_CHARS).
A summary is accepted only if it is non-empty and has fewer tokens than the messages it
replaces (design document, SummarizationHook: "不应比原文更长"); every summary that comes
back is reported as a SUMMARY event, accepted or not.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from memlab.errors import MemlabError
from memlab.llm import TASK_CONTEXT_SUMMARY, ChatModel, LLMError, prompts
from memlab.messages import Message
from memlab.tokens import TokenCounter
from memlab.trace import SUMMARY, emit, timed

# Design document, SUMMARIZE step 1: "总字符数 > MAX_CONVERSATION_CHARS(50000) → 截断到前 50000 字符".
MAX_CONVERSATION_CHARS = 50_000
# Ours: the document sets no length for a summary; this caps what the model may write.
DEFAULT_SUMMARY_TOKENS = 256

# Why a summary was not used (the `reason` of a FALLBACK event).
NO_MODEL = "no_model"
LLM_ERROR = "llm_error"
EMPTY_SUMMARY = "empty_summary"
NOT_SHORTER = "summary_not_shorter"


@dataclass(frozen=True)
class Folded:
    """The summary message, or why there is none (`reason`, and the error's class name if one was raised)."""

    message: Message | None
    reason: str | None = None
    error: str | None = None


def check_summary_settings(language: str, max_conversation_chars: int, summary_tokens: int | None) -> None:
    """Errors that name the key, raised when a strategy is built rather than on its first call."""
    if language not in prompts.LANGUAGES:
        raise MemlabError(
            f"context: language={language!r} is not supported; expected one of {', '.join(prompts.LANGUAGES)}"
        )
    if (
        isinstance(max_conversation_chars, bool)
        or not isinstance(max_conversation_chars, int)
        or max_conversation_chars < 1
    ):
        raise MemlabError(f"context: max_conversation_chars={max_conversation_chars!r}; expected an integer >= 1")
    if summary_tokens is not None and (not isinstance(summary_tokens, int) or summary_tokens < 1):
        raise MemlabError(f"context: summary_tokens={summary_tokens!r}; expected an integer >= 1 or null")


def fold(
    messages: Sequence[Message],
    *,
    llm: ChatModel | None,
    counter: TokenCounter,
    strategy: str,
    language: str = "en",
    max_conversation_chars: int = MAX_CONVERSATION_CHARS,
    summary_tokens: int | None = DEFAULT_SUMMARY_TOKENS,
) -> Folded:
    """Summarize `messages` into one system message; emits SUMMARY for any summary the model returns."""
    if llm is None:
        return Folded(None, NO_MODEL)
    transcript = prompts.render_transcript(messages)
    truncated = len(transcript) > max_conversation_chars
    request = prompts.build(TASK_CONTEXT_SUMMARY, transcript[:max_conversation_chars], language)
    with timed() as t:
        try:
            completion = llm.complete(request, task=TASK_CONTEXT_SUMMARY, max_tokens=summary_tokens)
        except LLMError as e:
            return Folded(None, LLM_ERROR, type(e).__name__)
    text = completion.text.strip()
    summary = Message(role="system", content=prompts.CONTEXT_SUMMARY_PREFIX[language] + text)
    source_tokens = sum(map(counter.count, messages))
    made_tokens = counter.count(summary)
    reason = EMPTY_SUMMARY if not text else NOT_SHORTER if made_tokens >= source_tokens else None
    emit(
        SUMMARY,
        strategy=strategy,
        source_ids=[m.id for m in messages if m.id is not None],
        source_messages=len(messages),
        source_tokens=source_tokens,
        summary_tokens=made_tokens,
        truncated=truncated,
        accepted=reason is None,
        latency_us=t["us"],
    )
    return Folded(summary if reason is None else None, reason)
