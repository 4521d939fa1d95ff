"""Replaying all of locomo_dev7.json with no strategy: a benchmark (runs once as a test by default)."""

from __future__ import annotations

from pathlib import Path

from memlab.dialogues import load_locomo
from memlab.memory import InMemoryChatMemory
from memlab.runtime import Runtime, SecurityContext
from memlab.sim import CallRecord, simulate
from memlab.tokens import get_counter


def test_replay_locomo_dev7(benchmark, locomo_path: Path) -> None:
    dialogues = load_locomo(locomo_path)
    counter = get_counter("cl100k_base")

    def make_runtime(d):
        return Runtime(history=InMemoryChatMemory(d.id), counter=counter, security=SecurityContext(user_id=d.user_id))

    records = benchmark(lambda: list(simulate(dialogues, make_runtime)))
    calls = [r for r in records if isinstance(r, CallRecord)]
    assert len(calls) == sum(m.role == "assistant" for d in dialogues for m in d.messages())
    # with no strategy every call sends the whole history so far
    assert all(c.prompt_tokens == c.full_tokens for c in calls)
