"""SUMMARIZE: past `threshold` messages, fold all but the last `keep_last` into one summary.

Design document, Context layer SUMMARIZE: when ``messages.size() > threshold``, cut the text
to summarize to MAX_CONVERSATION_CHARS (50,000), ask the model for a summary and return
``[summary (SYSTEM)] + [the last few messages]``; if the model call fails, degrade to the
first 3 messages. Beyond the document:

- leading system messages (the agent's instructions) stay verbatim in front of the summary
  instead of being summarized away: the document's picture is of a conversation, and a
  summary of instructions is not instructions;
- a summary that is empty or longer (in tokens) than what it replaces is rejected and
  the same fallback is used (the SummarizationHook's check, applied here too);
- no model (``llm: null``) takes the fallback as well, recorded with reason ``no_model``;
- cuts respect tool-call units: the kept tail grows back to the start of the unit it would
  split, and the first-3 fallback grows to the end of the unit it would split.

Every summary and fallback is reported by `memlab.summary.write_summary`.
"""

from __future__ import annotations

from collections.abc import Sequence

from memlab.context.base import check_count, leading_system
from memlab.llm import ChatModel
from memlab.messages import Message, MessageLike, as_messages, dicts_in_dicts_out
from memlab.summary import (
    DEFAULT_SUMMARY_TOKENS,
    LAYER_CONTEXT,
    MAX_CONVERSATION_CHARS,
    GrowingTranscript,
    check_summary_settings,
    write_summary,
)
from memlab.tokens import Tallied, TokenCounter, resolve_counter, tallied_part
from memlab.trace import SourceChain
from memlab.units import tail_start, unit_end_at

# Design document, SUMMARIZE: "1条摘要 + 5条最新" (one summary plus the 5 newest messages).
DEFAULT_KEEP_LAST = 5
# Design document, SUMMARIZE step 4: "降级: 只保留前 3 条消息".
FALLBACK_KEEP_FIRST = 3
FALLBACK_ACTION = "keep_first"
# Ours: the document names the threshold but gives no value.
DEFAULT_THRESHOLD = 20


class Summarize:
    """Replace the older part of a long conversation by a model-written summary.

    Parameters: the fields of `memlab.context.schemas.SummarizeConfig`, each documented there once.
    """

    name = "summarize"

    def __init__(
        self,
        llm: ChatModel | None,
        threshold: int = DEFAULT_THRESHOLD,
        keep_last: int = DEFAULT_KEEP_LAST,
        max_conversation_chars: int = MAX_CONVERSATION_CHARS,
        language: str = "en",
        summary_tokens: int | None = DEFAULT_SUMMARY_TOKENS,
        counter: str | TokenCounter = "estimate",
    ) -> None:
        check_summary_settings(language, max_conversation_chars, summary_tokens)
        self.llm = llm
        self.threshold = check_count("threshold", threshold)
        self.keep_last = check_count("keep_last", keep_last)
        self.max_conversation_chars = max_conversation_chars
        self.language = language
        self.summary_tokens = summary_tokens
        self.counter = resolve_counter(counter)
        self._transcript = GrowingTranscript()  # the history grows by a message or two between calls
        self._sources = SourceChain()  # and so does the part folded

    @dicts_in_dicts_out
    def apply(self, messages: Sequence[MessageLike]) -> list[Message]:
        # A history's request (`Tallied`, Messages only) is read as it is: no per-message pass.
        ms = messages if isinstance(messages, Tallied) else as_messages(messages)
        n = len(ms)
        if n <= self.threshold:
            return list(ms)
        head = leading_system(ms)
        start = max(head, tail_start(ms, self.keep_last))
        if start == head:
            return list(ms)  # nothing between the instructions and the kept tail
        folded = write_summary(
            tallied_part(ms, head, start),
            llm=self.llm,
            counter=self.counter,
            layer=LAYER_CONTEXT,
            strategy=self.name,
            fallback=FALLBACK_ACTION,
            language=self.language,
            max_conversation_chars=self.max_conversation_chars,
            summary_tokens=self.summary_tokens,
            render=self._transcript.render,
            source_ids=self._sources.ids,
        )
        if folded.message is not None:
            return [*ms[:head], folded.message, *ms[start:]]
        return list(ms[: unit_end_at(ms, min(FALLBACK_KEEP_FIRST, n) - 1)])

    def __repr__(self) -> str:
        model = getattr(self.llm, "name", None)
        return f"Summarize(llm={model!r}, threshold={self.threshold}, keep_last={self.keep_last})"
