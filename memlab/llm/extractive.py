"""The offline default model: deterministic extractive answers read from the prompt itself.

It does each task from the same messages a real model would get (`memlab.llm.prompts`):
summaries select the highest-scoring transcript lines (TF-IDF, scikit-learn) within the
output budget and never return more text than they were given; memory extraction applies
the transparent rules of `memlab.llm.extract_rules`.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import numpy as np
from sklearn.feature_extraction.text import TfidfVectorizer

from memlab.llm.base import (
    TASK_CONTEXT_SUMMARY,
    TASK_EXTRACT_MEMORIES,
    TASK_MEMORY_SUMMARY,
    Completion,
    LLMError,
    RecordedChatModel,
)
from memlab.llm.prompts import parse_transcript, transcript_of
from memlab.messages import MessageLike, as_messages
from memlab.tokens import get_counter

DEFAULT_SUMMARY_TOKENS = 256


def summarize_lines(lines: Sequence[str], max_tokens: int, counter_spec: str = "cl100k_base") -> str:
    """The best lines, in their original order, within `max_tokens` (never longer than the input)."""
    lines = [ln for ln in lines if ln.strip()]
    if not lines:
        return ""
    counter = get_counter(counter_spec)
    try:
        weights = TfidfVectorizer(sublinear_tf=True).fit_transform(lines)
        scores = np.asarray(weights.sum(axis=1)).ravel()
    except ValueError:  # only stop words or punctuation
        scores = np.zeros(len(lines))
    order = sorted(range(len(lines)), key=lambda i: (-scores[i], i))
    chosen, used = [], 0
    for i in order:
        cost = counter.count_text(lines[i]) + 1
        if used + cost <= max_tokens:
            chosen.append(i)
            used += cost
    return "\n".join(lines[i] for i in sorted(chosen))


class ExtractiveChatModel(RecordedChatModel):
    """Deterministic, offline, free: the lab's default `llm`."""

    name = "extractive"

    def __init__(self, counter: str = "cl100k_base", summary_tokens: int = DEFAULT_SUMMARY_TOKENS) -> None:
        self.counter = counter
        self.summary_tokens = summary_tokens

    def _complete(
        self, messages: Sequence[MessageLike], *, task: str, max_tokens: int | None, **params: Any
    ) -> Completion:
        msgs = as_messages(messages)
        transcript = transcript_of(msgs)
        budget = max_tokens or self.summary_tokens
        if task in (TASK_CONTEXT_SUMMARY, TASK_MEMORY_SUMMARY):
            lines = [f"{ln.speaker}: {ln.text}" for ln in parse_transcript(transcript)]
            text = summarize_lines(lines, budget, self.counter)
        elif task == TASK_EXTRACT_MEMORIES:
            from memlab.llm.extract_rules import extract_memories

            text = json.dumps(extract_memories(parse_transcript(transcript)), ensure_ascii=False)
        else:
            raise LLMError(f"the extractive backend cannot do task {task!r}")
        counter = get_counter(self.counter)
        return Completion(
            text=text,
            prompt_tokens=counter.count_request(msgs),
            completion_tokens=counter.count_text(text),
            model=self.name,
        )
