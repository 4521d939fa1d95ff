"""Peers per call beside memlab's own strategies: a replay of a 600-message LoCoMo history.

Every strategy sees the same requests (the history before every 10th assistant turn, as a replay
sends them) at the same budget (4,000 cl100k_base tokens, memlab's cached counter). Each prints
its mean time per call and its ratio to memlab's strategy of the same kind: SLIDING_WINDOW for the
token-budgeted peers, TRIM for the message-count ones. Run with
``pytest tests/benchmarks/test_peers_bench.py --benchmark-enable -s``.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import pytest
from peer_libraries import (
    AutogenBuffered,
    AutogenHeadTail,
    AutogenTokenLimited,
    LangchainTrim,
    LlamaIndexBuffer,
    LlamaIndexSummary,
)

from memlab.context import ContextStrategy, SlidingWindow, Trim
from memlab.dialogues import load_locomo
from memlab.llm import ExtractiveChatModel
from memlab.messages import Message
from memlab.tokens import get_counter

HISTORY = 600
MAX_TOKENS = 4_000
COUNTER = "cl100k_base"
STRIDE = 10

# name -> (how to build it, memlab's strategy of the same kind)
STRATEGIES: dict[str, tuple[Callable[[], ContextStrategy], str]] = {
    "sliding_window": (lambda: SlidingWindow(MAX_TOKENS, counter=COUNTER), "sliding_window"),
    "trim": (lambda: Trim(), "trim"),
    "langchain_trim": (lambda: LangchainTrim(MAX_TOKENS, counter=COUNTER), "sliding_window"),
    "llamaindex_buffer": (lambda: LlamaIndexBuffer(MAX_TOKENS, counter=COUNTER), "sliding_window"),
    "llamaindex_summary": (
        lambda: LlamaIndexSummary(ExtractiveChatModel(), max_tokens=MAX_TOKENS, counter=COUNTER),
        "sliding_window",
    ),
    "autogen_token_limited": (lambda: AutogenTokenLimited(MAX_TOKENS, counter=COUNTER), "sliding_window"),
    "autogen_head_tail": (lambda: AutogenHeadTail(), "trim"),
    "autogen_buffered": (lambda: AutogenBuffered(), "trim"),
}


@pytest.fixture(scope="module")
def history(locomo_path: Path) -> list[Message]:
    """The first 600 turns of the longest LoCoMo conversation, counted once (as in a replay)."""
    conversation = max((list(d.messages()) for d in load_locomo(locomo_path)), key=len)
    ms = [Message("system", "You are a helpful assistant who remembers what the user told you."), *conversation]
    get_counter(COUNTER).count_messages(ms[:HISTORY])
    return ms[:HISTORY]


def replay_us(strategy: ContextStrategy, history: list[Message]) -> float:
    """Mean microseconds per call over the replay's requests, the second time through (warm, as in a long replay:
    every message already converted and counted once)."""
    turns = [i for i, m in enumerate(history) if m.role == "assistant"][::STRIDE]
    for i in turns:
        strategy.apply(history[:i])
    start = time.perf_counter()
    for i in turns:
        strategy.apply(history[:i])
    return (time.perf_counter() - start) / len(turns) * 1e6


@pytest.fixture(scope="module")
def memlab_us(history: list[Message]) -> dict[str, float]:
    return {name: replay_us(STRATEGIES[name][0](), history) for name in ("sliding_window", "trim")}


@pytest.mark.parametrize("name", list(STRATEGIES))
def test_bench_replay_per_call(timing, name: str, history: list[Message], memlab_us: dict[str, float]) -> None:  # type: ignore[no-untyped-def]
    """A measurement, not a check (make bench; llamaindex_buffer took 164 s in make test).

    pytest-benchmark records the replay's time, and `extra_info` (reports/benchmarks.json) its time per
    call and its ratio to memlab's strategy of the same kind. What the peers keep is tested in tests/context.
    """
    build, kind = STRATEGIES[name]
    us = timing.pedantic(replay_us, args=(build(), history), rounds=1, iterations=1)
    ratio = us / memlab_us[kind]
    timing.extra_info.update(per_call_us=round(us, 1), baseline=kind, ratio=round(ratio, 1))
    print(f"\n{name}: {us:,.0f} us per call, {ratio:,.1f}x memlab's {kind}")
