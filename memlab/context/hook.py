"""SummarizationHook: the BEFORE_LLM_CALL hook at order 50 that compresses an oversized request.

Design document, SummarizationHook: after the regular cropping (order 30), if
``estimateTokens(messages) > 80000`` the hook compresses urgently and replaces the messages:
with a chat model, an LLM summary; with no chat model, hard truncation. Its fallbacks:
(1) no chat model: truncate directly; (2) the LLM call fails: keep the first and last 1,000
characters with an omission marker between them; (3) after a summary, check that it is not
longer than the original. Beyond the document:

- what is compressed is the middle: leading system messages and the newest `keep_last`
  messages (grown to whole tool-call units) stay verbatim, so the model still sees its
  instructions and the turn it must answer;
- hard truncation is SLIDING_WINDOW at `trigger_tokens` (system messages kept), so it drops
  whole messages and tool-call units rather than cutting text; when the newest message (its
  unit) does not fit in the room the system messages leave under the trigger, it is kept anyway,
  its longest texts cut around an omission marker to fit that room, and the CONTEXT_APPLY event
  counts the characters cut (`newest_cut_chars`). When the system messages alone leave too little
  room for any cut to fit, nothing short of cutting the instructions (which the hook never does)
  brings the request under the trigger, so the newest unit is cut only to the trigger itself:
  sent whole unless it alone is over, and the request is sent over the trigger. A text is never
  replaced by a longer one (the marker alone can outgrow a short text), so the count is never
  negative and the output never larger than the input;
- the transcript sent for the summary is cut to MAX_CONVERSATION_CHARS, as in SUMMARIZE (an
  80,000-token request would otherwise overflow the summary call itself);
- a rejected summary (empty, or longer in tokens) takes fallback (2); every summary and
  fallback is reported by `memlab.summary.write_summary` (layer ``context``);
- fallback 2's message replaces the middle only when it has no more tokens than the middle (a
  short middle's transcript plus the prefix can outgrow it); otherwise nothing replaces the middle
  and the request is hard-truncated as with no model;
- with a model, when what is kept verbatim (the system messages and the newest turn) is over the trigger
  on its own, the request is hard-truncated after the summary as with no model, so the request sent is
  under the trigger, as the urgent compression is meant to leave it, unless the system messages alone
  are over it (the middle's summary, or fallback 2's 2,000 characters, is kept and counted in that budget; one
  that alone takes a request kept verbatim under the trigger over it is sent as it is, as the document's
  fallback 2 says).
"""

from __future__ import annotations

from collections.abc import Sequence

from memlab.context.base import check_count, leading_system
from memlab.context.interceptor import request_counter
from memlab.context.sliding_window import SlidingWindow
from memlab.llm import ChatModel, prompts
from memlab.messages import Message
from memlab.runtime import ORDER_SUMMARIZATION_HOOK, CallContext, Component, RequestStage
from memlab.summary import (
    DEFAULT_SUMMARY_TOKENS,
    LAYER_CONTEXT,
    MAX_CONVERSATION_CHARS,
    Folded,
    check_summary_settings,
    write_summary,
)
from memlab.tokens import TokenCounter, resolve_counter
from memlab.trace import CONTEXT_APPLY, SourceChain, emit, timed
from memlab.units import tail_start

# Design document, SummarizationHook: "token 数超过 80000 时自动触发压缩".
TRIGGER_TOKENS = 80_000
# Design document, fallback 2: "保留首尾各 1000 字符 + 中间省略标记".
KEEP_CHARS = 1_000
OMISSION_MARKER = {"en": "\n[... {n} characters omitted ...]\n", "zh": "\n[……中间省略 {n} 个字符……]\n"}
# Ours: keep the newest message (and its tool-call unit) out of the compression.
DEFAULT_KEEP_LAST = 1

STAGE = "summarization_hook"
# The document's fallbacks 1 and 2, as named in FALLBACK events.
HARD_TRUNCATION = "hard_truncation"
HEAD_TAIL_CHARS = "head_tail_chars"


def keep_head_and_tail(text: str, keep_chars: int = KEEP_CHARS, language: str = "en") -> str:
    """The first and last `keep_chars` characters with an omission marker between them.

    Args:
        text: The text to shorten.
        keep_chars: Characters kept at each end.
        language: The language of the omission marker (en or zh).

    >>> keep_head_and_tail("abcdefghij", keep_chars=2)
    'ab\\n[... 6 characters omitted ...]\\nij'
    """
    if len(text) <= 2 * keep_chars:
        return text
    omitted = len(text) - 2 * keep_chars
    return text[:keep_chars] + OMISSION_MARKER[language].format(n=omitted) + text[len(text) - keep_chars :]


class SummarizationHook(Component):
    """An emergency brake on request size, run after context editing.

    Parameters: the fields of `memlab.context.schemas.SummarizationHookConfig`, each documented there once.
    """

    order = ORDER_SUMMARIZATION_HOOK

    def __init__(
        self,
        llm: ChatModel | None = None,
        trigger_tokens: int = TRIGGER_TOKENS,
        counter: str | TokenCounter = "estimate",
        keep_last: int = DEFAULT_KEEP_LAST,
        keep_chars: int = KEEP_CHARS,
        language: str = "en",
        max_conversation_chars: int = MAX_CONVERSATION_CHARS,
        summary_tokens: int | None = DEFAULT_SUMMARY_TOKENS,
    ) -> None:
        check_summary_settings(language, max_conversation_chars, summary_tokens)
        self.llm = llm
        self.trigger_tokens = check_count("trigger_tokens", trigger_tokens)
        self.counter = resolve_counter(counter)
        self.keep_last = check_count("keep_last", keep_last)
        self.keep_chars = check_count("keep_chars", keep_chars)
        self.language = language
        self.max_conversation_chars = max_conversation_chars
        self.summary_tokens = summary_tokens
        self._sources = SourceChain()  # past the trigger, each call folds the last one's middle and more

    def stages(self) -> Sequence[RequestStage]:
        return [self]

    def process(self, messages: Sequence[Message], ctx: CallContext) -> list[Message]:
        if sum(map(self.counter.count, messages)) <= self.trigger_tokens:
            return list(messages)
        with timed() as t:
            out, cut = self._compress(messages)
        counter = request_counter(ctx)
        emit(
            CONTEXT_APPLY,
            stage=STAGE,
            strategy=STAGE,
            messages_in=len(messages),
            messages_out=len(out),
            tokens_in=sum(map(counter.count, messages)),
            tokens_out=sum(map(counter.count, out)),
            newest_cut_chars=cut,
            latency_us=t["us"],
        )
        return out

    def compress(self, messages: Sequence[Message]) -> list[Message]:
        """The urgent compression, whatever the size: summary, or one of the document's fallbacks."""
        return self._compress(messages)[0]

    def _compress(self, messages: Sequence[Message]) -> tuple[list[Message], int]:
        """`compress`, and the characters cut from the newest unit (hard truncation only)."""
        ms = list(messages)
        if self.llm is None:
            self._summarize(ms, HARD_TRUNCATION)  # reports the no-model fallback
            return self._truncate(ms)
        head = leading_system(ms)
        start = max(head, tail_start(ms, self.keep_last))
        middle = ms[head:start]
        out = ms
        if middle:
            # A model's summary is never longer than the middle (`write_summary` rejects one that is, by the
            # same count); fallback 2's message is checked here: never a larger replacement.
            summary = self._summarize(middle, HEAD_TAIL_CHARS).message
            if summary is None:
                clipped = keep_head_and_tail(prompts.render_transcript(middle), self.keep_chars, self.language)
                head_tail = Message(role="system", content=prompts.CONTEXT_SUMMARY_PREFIX[self.language] + clipped)
                if self.counter.count(head_tail) <= sum(map(self.counter.count, middle)):
                    summary = head_tail
            if summary is not None:
                out = [*ms[:head], summary, *ms[start:]]
        if out is ms or sum(map(self.counter.count, [*ms[:head], *ms[start:]])) > self.trigger_tokens:
            return self._truncate(out)
        return out, 0

    def _truncate(self, ms: list[Message]) -> tuple[list[Message], int]:
        """Hard truncation: SLIDING_WINDOW at the trigger, the newest unit kept if it does not fit beside the rest."""
        out = SlidingWindow(max_tokens=self.trigger_tokens, counter=self.counter, keep_system=True).apply(ms)
        if ms and ms[-1].role != "system" and ms[-1] not in out:  # the newest turn does not fit beside them
            return self._keep_newest_cut(ms, out)
        return out, 0

    def _keep_newest_cut(self, ms: list[Message], kept: list[Message]) -> tuple[list[Message], int]:
        """The system messages SLIDING_WINDOW kept plus the newest unit, its longest texts cut to fit.

        Beyond the document (its hard truncation would leave only the system prompt, and the
        model nothing to answer): each cut keeps the head and tail of a text around the omission
        marker, as fallback 2 does. The unit is cut to the room the system messages leave under
        the trigger; when no cut fits that room (the system messages alone fill it, and the hook
        never cuts instructions), cutting the turn to answer would not bring the request under the
        trigger, so the unit is cut only as far as the trigger itself: whole, unless it alone is
        over. Returns the messages and the characters cut.
        """
        system_part = [m for m in kept if m.role == "system"]
        unit = [m for m in ms[tail_start(ms, 1) :] if m.role != "system"]
        room = self.trigger_tokens - sum(map(self.counter.count, system_part))
        if room > 0:  # with no room, what the cut to the room would keep is the cut to the trigger
            cut_unit, cut = self._cut_to(unit, room)
            if sum(map(self.counter.count, cut_unit)) <= room:
                return [*system_part, *cut_unit], cut
        cut_unit, cut = self._cut_to(unit, self.trigger_tokens)
        return [*system_part, *cut_unit], cut

    def _cut_to(self, unit: list[Message], budget: int) -> tuple[list[Message], int]:
        """`unit` with its longest texts cut until it fits `budget` tokens or cannot shrink; the characters cut.

        A text is only ever replaced by a shorter one (characters and tokens): one the omission marker
        alone would outgrow stays as it is.
        """
        unit = list(unit)
        cut = 0
        for i in sorted(range(len(unit)), key=lambda j: -len(unit[j].text)):
            over = sum(map(self.counter.count, unit)) - budget
            if over <= 0:
                break
            text, tokens = unit[i].text, self.counter.count(unit[i])
            lo, hi = 0, len(text) // 2  # the most characters kept at each end that still fits
            while lo < hi:
                mid = (lo + hi + 1) // 2
                trial = unit[i].with_content(keep_head_and_tail(text, mid, self.language))
                if self.counter.count(trial) - tokens <= -over:
                    lo = mid
                else:
                    hi = mid - 1
            shorter = unit[i].with_content(keep_head_and_tail(text, lo, self.language))
            if len(shorter.text) < len(text) and self.counter.count(shorter) < tokens:
                cut += len(text) - len(shorter.text)
                unit[i] = shorter
        return unit, cut

    def _summarize(self, messages: list[Message], fallback: str) -> Folded:
        return write_summary(
            messages,
            llm=self.llm,
            counter=self.counter,
            layer=LAYER_CONTEXT,
            strategy=STAGE,
            fallback=fallback,
            language=self.language,
            max_conversation_chars=self.max_conversation_chars,
            summary_tokens=self.summary_tokens,
            source_ids=self._sources.ids,
        )

    def __repr__(self) -> str:
        return f"SummarizationHook(llm={getattr(self.llm, 'name', None)!r}, trigger_tokens={self.trigger_tokens})"
