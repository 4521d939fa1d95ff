"""The offline default model: deterministic extractive answers read from the prompt itself.

It does each task from the same messages a real model would get (`memlab.llm.prompts`):

- context and memory summaries: the best transcript sentences within the output budget
  (`memlab.llm.summarize`), never longer than the transcript; a request the process has summarized
  before is answered from memory (`SummaryMemo`, reported as `Completion.cached`), since probes and
  every call past the 50,000-character guard send the same one;
- memory extraction: the transparent rules of `memlab.llm.extract_rules`, as a JSON array;
- answers: the transcript sentence that best matches the question (BM25; an extractive QA baseline),
  "" when no sentence shares a content term with it;
- judging: CORRECT when the generated answer holds most of the gold answer's content terms
  and all of its numbers, else WRONG;
- chat: it cannot converse, so it replies with the earlier sentence most similar to the last
  message (keeps an offline `simulate` running; the reply is a quotation, never a new thought),
  and raises `LLMError` when nothing earlier relates to it.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

import numpy as np
from rank_bm25 import BM25Okapi

from memlab.llm import base
from memlab.llm.prompts import parse_transcript, source_text, transcript_of
from memlab.llm.summarize import extractive_summary
from memlab.messages import Message, MessageLike, as_messages
from memlab.text import content_terms, is_date_or_number, split_sentences, terms
from memlab.tokens import get_counter
from memlab.vocabulary import TEMPORAL_QUESTION

DEFAULT_ANSWER_TOKENS = 64
JUDGE_MIN_RECALL = 0.5  # share of the gold answer's content terms the generated answer must contain
_QUESTION = re.compile(r"\n\n(?:Question|问题): (?P<q>.*)\Z", re.DOTALL)
_JUDGE_FIELDS = re.compile(
    r"Question: (?P<question>.*)\nGold answer: (?P<gold>.*)\nGenerated answer: (?P<generated>.*)\Z", re.DOTALL
)


def best_sentence(question: str, candidates: Sequence[str]) -> int | None:
    """Index of the candidate that best matches `question` (BM25 over content terms), None if none shares one.

    A "when" question doubles the score of candidates that carry a date or a number. Okapi's idf is zero
    or negative for a term in half or more of the candidates, so when no score is positive (one or two
    sentences, say) the candidate sharing the most distinct query terms wins (the first of equals).
    """
    docs = [content_terms(c) for c in candidates]
    query = content_terms(question)
    if not query or not any(docs):
        return None
    scores = BM25Okapi(docs).get_scores(query)
    if TEMPORAL_QUESTION.search(question):
        scores = scores * (1 + np.array([any(map(is_date_or_number, d)) for d in docs]))
    best = int(np.argmax(scores))
    if scores[best] > 0:
        return best
    wanted = set(query)
    shared = [len(wanted.intersection(d)) for d in docs]
    best = int(np.argmax(shared))
    return best if shared[best] else None


def judge(gold: str, generated: str) -> bool:
    """Token-overlap judgement: most of the gold content terms and every gold number are in the answer."""
    gold_terms = set(content_terms(gold)) or set(terms(gold))
    if not gold_terms:
        return False
    answer = set(terms(generated))
    numbers = {t for t in gold_terms if t[0].isdigit()}
    return numbers <= answer and len(gold_terms & answer) / len(gold_terms) >= JUDGE_MIN_RECALL


def _truncate(text: str, max_tokens: int, counter: str) -> str:
    """`text` cut at a word boundary so that it fits `max_tokens`."""
    count = get_counter(counter).count_text
    words = text.split(" ")
    while words and count(" ".join(words)) > max_tokens:
        words.pop()
    return " ".join(words)


def _sentences(transcript: str) -> list[tuple[str, str]]:
    """(speaker, sentence) pairs of a transcript (speaker "" for lines that are not transcript lines)."""
    lines = [(ln.speaker, ln.text) for ln in parse_transcript(transcript)] or [("", t) for t in transcript.splitlines()]
    return [(speaker, s) for speaker, line in lines for s in split_sentences(line)]


class SummaryMemo:
    """Summaries by the sha256 of the summarizer's exact input, shared by every extractive model of a process.

    The summarizer is deterministic, so a repeat is the same bytes; only the digest and the summary
    are kept (`max_entries` of them, least recently used dropped).
    """

    def __init__(self, max_entries: int = 1 << 16) -> None:
        self.max_entries = max_entries
        self._summaries: OrderedDict[bytes, str] = OrderedDict()
        self.hits = 0
        self.misses = 0
        self._new: list[bytes] = []  # keys added since the last `take_new`
        self._last: tuple[tuple[int, str, bool], str, bytes] | None = None  # the last request and its key

    def _key(self, transcript: str, max_tokens: int, counter: str, personal: bool) -> bytes:
        """The request's sha256; a repeat of the last request (a guarded transcript, a probe's) is not hashed again.

        Comparing with the last transcript costs nothing when the lengths differ, as a grown one's do.
        """
        request = (max_tokens, counter, personal)
        last = self._last
        if last is not None and last[0] == request and last[1] == transcript:
            return last[2]
        key = hashlib.sha256(f"{max_tokens}\0{counter}\0{personal:d}\0{transcript}".encode()).digest()
        self._last = (request, transcript, key)
        return key

    def summarize(self, transcript: str, max_tokens: int, counter: str, personal: bool) -> tuple[str, bool]:
        """The summary and whether it was remembered."""
        key = self._key(transcript, max_tokens, counter, personal)
        text = self._summaries.get(key)
        if text is not None:
            self._summaries.move_to_end(key)
            self.hits += 1
            return text, True
        self.misses += 1
        text = self._summaries[key] = extractive_summary(transcript, max_tokens, counter, personal)
        self._new.append(key)
        self._trim()
        return text, False

    def take_new(self) -> list[tuple[bytes, str]]:
        """The entries added since the last call (a replay worker sends them back to the parent process)."""
        new = [(k, self._summaries[k]) for k in self._new if k in self._summaries]
        self._new.clear()
        return new

    def add(self, entries: list[tuple[bytes, str]]) -> None:
        """Remember entries another process computed (so the next job of a sweep finds them)."""
        self._summaries.update(entries)
        self._trim()

    def _trim(self) -> None:
        while len(self._summaries) > self.max_entries:
            self._summaries.popitem(last=False)
        del self._new[: -self.max_entries]  # nobody takes them in a one-process run

    def clear(self) -> None:
        self._summaries.clear()
        self._new.clear()
        self._last = None
        self.hits = self.misses = 0


SUMMARY_MEMO = SummaryMemo()


def _extract_memories(transcript: str) -> str:
    try:
        from memlab.llm.extract_rules import extract_memories
    except ImportError as e:
        raise base.LLMError(
            f"the extractive backend needs memlab.llm.extract_rules for {base.TASK_EXTRACT_MEMORIES}: {e}"
        ) from e
    return json.dumps(extract_memories(parse_transcript(transcript)), ensure_ascii=False)


class ExtractiveChatModel(base.RecordedChatModel):
    """Deterministic, offline, free: the lab's default `llm` (see the module docstring for each task).

    Parameters: the fields of `memlab.llm.schemas.ExtractiveConfig`, each documented there once.
    """

    name = "extractive"
    # Its empty answer is its abstention (nothing shares a content term with the question), a measured answer: not
    # counted in answer.empty, which is there to catch a provider replying with no text.
    empty_answer_abstains = True

    def __init__(self, counter: str = "cl100k_base", summary_tokens: int = base.DEFAULT_SUMMARY_TOKENS) -> None:
        self.counter = counter
        self.summary_tokens = summary_tokens

    def _complete(
        self, messages: Sequence[MessageLike], *, task: str, max_tokens: int | None, **params: Any
    ) -> base.Completion:
        msgs = as_messages(messages)
        if not msgs:
            raise base.LLMError("the extractive backend got no messages")
        cached = False
        if task in (base.TASK_CONTEXT_SUMMARY, base.TASK_MEMORY_SUMMARY):
            source = source_text(msgs)
            budget = max_tokens or self.summary_tokens
            text, cached = SUMMARY_MEMO.summarize(source, budget, self.counter, task == base.TASK_MEMORY_SUMMARY)
        elif task == base.TASK_EXTRACT_MEMORIES:
            text = _extract_memories(transcript_of(msgs))
        elif task == base.TASK_JUDGE:
            fields = _JUDGE_FIELDS.search(msgs[-1].text)
            if fields is None:
                raise base.LLMError("the extractive judge needs the judge prompt (memlab.llm.prompts.judge_prompt)")
            text = "CORRECT" if judge(fields["gold"], fields["generated"]) else "WRONG"
        else:
            text = _truncate(self._answer(msgs, task), max_tokens or DEFAULT_ANSWER_TOKENS, self.counter)
        counter = get_counter(self.counter)
        return base.Completion(
            text=text,
            prompt_tokens=counter.count_request(msgs),
            completion_tokens=counter.count_text(text),
            model=self.name,
            cached=cached,
        )

    def _answer(self, msgs: list[Message], task: str) -> str:
        """The sentence that best answers the question (answer) or the last message (chat)."""
        if task == base.TASK_ANSWER:
            match = _QUESTION.search(msgs[-1].text)
            if match is None:
                raise base.LLMError("the extractive backend found no 'Question:' in the answer prompt")
            question, sentences = match["q"], _sentences(transcript_of(msgs))
        else:
            assert task == base.TASK_CHAT
            question = msgs[-1].text
            sentences = [
                (m.speaker or m.name or "", s) for m in msgs[:-1] if m.role != "system" for s in split_sentences(m.text)
            ]
        # The speaker is matched too ("What did Caroline research?"), but the answer is the sentence alone.
        best = best_sentence(question, [f"{speaker} {s}" for speaker, s in sentences])
        if best is not None:
            return sentences[best][1]
        if task == base.TASK_ANSWER:
            return ""  # nothing in the transcript shares a content term with the question: no answer
        raise base.LLMError(f"the extractive backend has nothing related to {question[:80]!r} to reply with")
