"""Fault injection: a wrapper that makes any backend fail the ways real providers do, on purpose.

At `rate`, a call is answered with one of `modes` (drawn uniformly) instead of the inner model:
``error`` raises `LLMError`, ``timeout`` raises `LLMTimeout`, ``empty`` returns "", and ``long``
returns text longer than its input (the transcript, or the last message, twice). The draws come
from a `random.Random(seed)`, so a run with the same calls in the same order fails the same way.
Each instance draws from its own sequence: with ``llm=faulty`` every component given ``${llm}`` (a
context or memory summarizer, long-term extraction, a compressor) and the answer evaluation builds its
own model, all seeded with the run's `seed`, so each component's calls meet the same fault sequence,
not shares of one sequence through the run.
Calls that pass through are recorded by the inner backend; an injected fault is recorded as an
LLM_CALL of backend ``faulty`` whose `model` is ``faulty:<mode>``.

>>> from memlab.llm.extractive import ExtractiveChatModel
>>> model = FaultyChatModel(ExtractiveChatModel(), rate=1.0, modes=["empty"])
>>> model.complete([{"role": "user", "content": "hi"}], task="context_summary").text
''
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

from memlab.llm.base import TASK_CHAT, ChatModel, Completion, LLMError, LLMTimeout, RecordedChatModel, built_run_wide
from memlab.llm.extractive import ExtractiveChatModel
from memlab.llm.prompts import source_text
from memlab.messages import MessageLike, as_messages
from memlab.tokens import get_counter

FAULT_MODES = ("error", "timeout", "empty", "long")
DEFAULT_FAULT_RATE = 0.2


class FaultyChatModel(RecordedChatModel):
    """`inner` (default: the extractive model), except that a share `rate` of calls fail in one of `modes`.

    Parameters: the fields of `memlab.llm.schemas.FaultyConfig`, each documented there once.
    """

    name = "faulty"
    # This instance's failures follow one random sequence through all of the run's dialogues (one sequence per
    # instance: each component builds its own, seeded alike), so the dialogues replay in one process.
    run_wide_state = True

    def __init__(
        self,
        inner: ChatModel | None = None,
        rate: float = DEFAULT_FAULT_RATE,
        modes: Sequence[str] = FAULT_MODES,
        seed: int = 0,
        counter: str = "cl100k_base",
    ) -> None:
        if not 0.0 <= rate <= 1.0:
            raise ValueError(f"faulty rate must be within [0, 1], got {rate}")
        unknown = [m for m in modes if m not in FAULT_MODES]
        if unknown or not modes:
            raise ValueError(f"faulty modes must be a non-empty subset of {', '.join(FAULT_MODES)}, got {list(modes)}")
        self.inner = inner if inner is not None else ExtractiveChatModel(counter=counter)
        self.rate = rate
        self.modes = tuple(modes)
        self.seed = seed
        self.counter = counter
        self._rng = random.Random(seed)
        self._fault = ""
        built_run_wide(self)

    def checkpoint(self) -> dict[str, Any]:
        """Where the random draws are: a resumed replay goes on with the next, as the uninterrupted one does."""
        return {"rng": self._rng.getstate()}

    def restore(self, state: dict[str, Any]) -> None:
        """Take back what `checkpoint` returned."""
        self._rng.setstate(state["rng"])

    def complete(
        self, messages: Sequence[MessageLike], *, task: str = TASK_CHAT, max_tokens: int | None = None, **params: Any
    ) -> Completion:
        # Two draws per call whatever the outcome, so one call's fault never shifts the next call's.
        hit, pick = self._rng.random(), self._rng.randrange(len(self.modes))
        if hit >= self.rate:
            return self.inner.complete(messages, task=task, max_tokens=max_tokens, **params)
        self._fault = self.modes[pick]
        return super().complete(messages, task=task, max_tokens=max_tokens, **params)

    def _complete(
        self, messages: Sequence[MessageLike], *, task: str, max_tokens: int | None, **params: Any
    ) -> Completion:
        where = f"injected by llm=faulty (rate={self.rate}, seed={self.seed})"
        if self._fault == "error":
            raise LLMError(f"provider error {where}")
        if self._fault == "timeout":
            raise LLMTimeout(f"timeout {where}")
        msgs = as_messages(messages)
        source = source_text(msgs) or "?"
        text = "" if self._fault == "empty" else f"{source}\n{source}"
        counter = get_counter(self.counter)
        return Completion(text, counter.count_request(msgs), counter.count_text(text), f"faulty:{self._fault}")
