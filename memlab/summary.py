"""One summarization path for every layer: ask the model, check the summary, report one SUMMARY event.

Context SUMMARIZE, the SummarizationHook, memory SUMMARIZE and the AgentMemory compressors all
summarize through `write_summary`. The text to summarize is the transcript of the source
messages (`memlab.llm.prompts.render_transcript`), cut to `max_conversation_chars` so that the
summary call itself cannot overflow (design document: MAX_CONVERSATION_CHARS). A summary is
accepted only if it is non-empty and has no more tokens than the messages it replaces (design
document, SummarizationHook: "生成后检查摘要长度是否合理（不应比原文更长）": not longer), counted with the
caller's counter, the same check on every layer. Each attempt is one typed `SummaryEvent`; when
the summary is not used, a FALLBACK event names the caller's documented fallback (`fallback`),
which the caller then takes: the context layer keeps the first 3 messages, the hook keeps the
head and tail characters, the memory layer keeps the history unchanged, a compressor writes the
document's counting line.
"""

from __future__ import annotations

import itertools
import operator
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from memlab.errors import MemlabError
from memlab.llm import TASK_CONTEXT_SUMMARY, ChatModel, LLMError, prompts
from memlab.llm.base import DEFAULT_SUMMARY_TOKENS
from memlab.messages import Message, MessageLike, as_message
from memlab.tokens import TokenCounter, request_tokens
from memlab.trace import FALLBACK, SourceIds, SummaryEvent, emit, timed

# Design document, SUMMARIZE step 1: "总字符数 > MAX_CONVERSATION_CHARS(50000) → 截断到前 50000 字符".
MAX_CONVERSATION_CHARS = 50_000

# Layers of a SummaryEvent (the `summary.<layer>.*` metrics).
LAYER_CONTEXT = "context"
LAYER_MEMORY = "memory"
LAYER_COMPRESSOR = "compressor"
LAYERS = (LAYER_CONTEXT, LAYER_MEMORY, LAYER_COMPRESSOR)

# Why a summary was not used (the `reason` of a FALLBACK event).
NO_MODEL = "no_model"
LLM_ERROR = "llm_error"
EMPTY_SUMMARY = "empty_summary"
LONGER = "summary_longer"


@dataclass(frozen=True)
class Folded:
    """The summary message, or why there is none (`reason`, and the error's class name if one was raised).

    `text` is the model's summary without the prefix (None when there is no usable one).
    """

    message: Message | None
    reason: str | None = None
    error: str | None = None
    text: str | None = None


class GrowingTranscript:
    """`render_transcript(source, max_chars)` for a source that grows at the end from one call to the next.

    SUMMARIZE renders the same first messages of its history on every call. This keeps the last
    rendering and the message objects it read, and renders only the messages after those (none
    once the text is past `max_chars`, since render_transcript stops there). A source that does
    not begin with the same objects is rendered afresh; messages are immutable, so the same
    objects give the same lines (a dict is converted anew each time, so it never matches).
    """

    def __init__(self) -> None:
        self._read: list[Message] = []
        self._lines: list[str] = []
        self._length = -1  # len("\n".join(self._lines))
        self._max_chars: int | None = None
        self._text = ""

    def render(self, source: Sequence[MessageLike], max_chars: int) -> str:
        read = len(self._read)
        same = max_chars == self._max_chars and len(source) >= read and all(map(operator.is_, self._read, source))
        if not same:
            self._read, self._lines, self._length, self._max_chars = [], [], -1, max_chars
        elif self._length > max_chars or len(source) == read:
            return self._text
        for raw in itertools.islice(source, len(self._read), None):
            m = as_message(raw)
            self._read.append(m)
            self._lines.append(line := prompts.transcript_line(m))
            self._length += len(line) + 1
            if self._length > max_chars:
                break
        self._text = "\n".join(self._lines)
        return self._text


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


def write_summary(
    source: Sequence[Message],
    *,
    llm: ChatModel | None,
    counter: TokenCounter,
    layer: str,
    strategy: str,
    fallback: str,
    task: str = TASK_CONTEXT_SUMMARY,
    language: str = "en",
    prefix: str | None = None,
    transcript: str | None = None,
    max_conversation_chars: int = MAX_CONVERSATION_CHARS,
    summary_tokens: int | None = DEFAULT_SUMMARY_TOKENS,
    render: Callable[[Sequence[Message], int], str] = prompts.render_transcript,
    source_ids: Callable[[Sequence[Message]], SourceIds] = SourceIds,
) -> Folded:
    """Summarize `source` into one system message ``prefix + summary``, or say why not.

    `prefix` defaults to the context summary's (``[Conversation summary] ``); `transcript`
    replaces the rendered transcript of `source` (a compressor adds its previous summary's lines);
    `render` renders it otherwise and `source_ids` keeps its ids for the SUMMARY event (a strategy that summarizes a
    growing history passes a `GrowingTranscript`'s and a `SourceChain`'s).
    `fallback` is the action the caller takes when the summary is not used; it is reported, not taken.
    """
    if layer not in LAYERS:
        raise ValueError(f"unknown summary layer {layer!r}; expected one of {', '.join(LAYERS)}")
    if llm is None:
        return _fallback(Folded(None, NO_MODEL), layer, strategy, fallback, len(source))
    text_in = render(source, max_conversation_chars) if transcript is None else transcript
    request = prompts.build(task, text_in[:max_conversation_chars], language)
    source_tokens = request_tokens(counter, source)  # from its tally when it has one (`tallied_part`)
    error: str | None = None
    text = ""
    summary: Message | None = None
    made_tokens: int | None = None
    with timed() as t:
        try:
            text = llm.complete(request, task=task, max_tokens=summary_tokens).text.strip()
        except LLMError as e:
            error = type(e).__name__
    if error is not None:
        reason: str | None = LLM_ERROR
    else:
        head = prompts.CONTEXT_SUMMARY_PREFIX[language] if prefix is None else prefix
        summary = Message(role="system", content=head + text)
        made_tokens = counter.count(summary)
        reason = EMPTY_SUMMARY if not text else LONGER if made_tokens > source_tokens else None
    SummaryEvent(
        layer=layer,
        strategy=strategy,
        source_ids=source_ids(source),
        source_messages=len(source),
        source_tokens=source_tokens,
        summary_tokens=made_tokens,
        counter=counter.name,
        accepted=reason is None,
        reason=reason,
        error=error,
        fallback=None if reason is None else fallback,
        truncated=len(text_in) > max_conversation_chars,
        text=summary.text if summary is not None else None,
        latency_us=t["us"],
    ).emit()
    if reason is not None:
        return _fallback(Folded(None, reason, error), layer, strategy, fallback, len(source))
    return Folded(summary, None, None, text)


def _fallback(folded: Folded, layer: str, strategy: str, action: str, source_messages: int) -> Folded:
    """Report that the caller takes its fallback `action` instead of a summary (counted in `llm.fallbacks`)."""
    emit(
        FALLBACK,
        layer=layer,
        strategy=strategy,
        reason=folded.reason,
        error=folded.error,
        action=action,
        source_messages=source_messages,
    )
    return folded
