"""Context strategies per call on a 600-message LoCoMo history, and over a whole replay, beside
langchain-core's `trim_messages` (strategy="last", include_system=True) with the same tiktoken counter.

memlab's strategies count with its cached cl100k_base counter (each message tokenized once per
run, as in a replay); `trim_messages` gets the same per-message tiktoken count as a plain
function, which it calls afresh on every request. Each benchmark stores, and prints, its own
best time per call and its speed-up over `trim_messages` (`benchmark.extra_info`). Run with
``pytest tests/benchmarks/test_context_bench.py --benchmark-enable -s``.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, trim_messages

from memlab.context import Composite, ContextStrategy, SlidingWindow, Summarize, Trim
from memlab.dialogues import load_locomo
from memlab.llm import ExtractiveChatModel
from memlab.messages import Message
from memlab.tokens import CHAT_TOKENS_PER_MESSAGE, CHAT_TOKENS_PER_NAME, get_counter, load_encoding

HISTORY = 600
MAX_TOKENS = 4_000
COUNTER = "cl100k_base"
SYSTEM_PROMPT = "You are a helpful assistant who remembers what the user told you."
_LC_CLASS = {"system": SystemMessage, "user": HumanMessage, "assistant": AIMessage}
_LC_ROLE = {"system": "system", "human": "user", "ai": "assistant"}


@pytest.fixture(scope="module")
def history(locomo_path: Path) -> list[Message]:
    """The system prompt and the first 599 turns of the longest LoCoMo conversation, counted once."""
    conversation = max((list(d.messages()) for d in load_locomo(locomo_path)), key=len)
    assert len(conversation) >= HISTORY - 1
    ms = [Message("system", SYSTEM_PROMPT), *conversation[: HISTORY - 1]]
    get_counter(COUNTER).count_messages(ms)  # a replay has counted every earlier message already
    return ms


def _tokens(role: str, content: str, name: str | None) -> int:
    """memlab's cl100k_base chat count of one message: 3 framing tokens, role, content, name."""
    enc = load_encoding(COUNTER)
    named = CHAT_TOKENS_PER_NAME + len(enc.encode(name)) if name else 0
    return CHAT_TOKENS_PER_MESSAGE + len(enc.encode(role)) + len(enc.encode(content)) + named


_memoized = functools.lru_cache(maxsize=None)(_tokens)


def tiktoken_per_message(messages: list[BaseMessage]) -> int:
    """The count as langchain users write it: tiktoken on every message of every request."""
    return sum(_tokens(_LC_ROLE[m.type], str(m.content), m.name) for m in messages)


def memoized_per_message(messages: list[BaseMessage]) -> int:
    """The same count memoized per message, to separate re-tokenizing from the rest of the work."""
    return sum(_memoized(_LC_ROLE[m.type], str(m.content), m.name) for m in messages)


COUNTERS = {"tiktoken": tiktoken_per_message, "memoized": memoized_per_message}


def langchain_trim(ms: list[BaseMessage], counter: str = "tiktoken") -> list[BaseMessage]:
    return trim_messages(
        ms, max_tokens=MAX_TOKENS, token_counter=COUNTERS[counter], strategy="last", include_system=True
    )


def to_langchain(history: list[Message]) -> list[BaseMessage]:
    return [_LC_CLASS[m.role](content=m.text, name=m.name) for m in history]


def best_us(fn: Callable[[], Any], repeat: int) -> float:
    """Best wall time of `repeat` runs, in microseconds (the ratio must not depend on --benchmark-enable)."""
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best * 1e6


STRATEGIES: dict[str, Callable[[], ContextStrategy]] = {
    "sliding_window": lambda: SlidingWindow(MAX_TOKENS, counter=COUNTER),
    "trim": lambda: Trim(),
    "summarize": lambda: Summarize(ExtractiveChatModel()),
    "composite": lambda: Composite([Summarize(ExtractiveChatModel()), SlidingWindow(MAX_TOKENS, counter=COUNTER)]),
}
REPEAT = {"sliding_window": 200, "trim": 200, "summarize": 3, "composite": 3}
# A replay calls at every REPLAY_STRIDE-th assistant turn, so the whole file runs in seconds as a test.
REPLAY_STRIDE = 10


@pytest.fixture(scope="module")
def langchain_us(history: list[Message]) -> dict[str, float]:
    """Best time per call of `trim_messages` with each counter."""
    lc = to_langchain(history)
    memoized_per_message(lc)  # warm, as memlab's counter is
    return {c: best_us(lambda c=c: langchain_trim(lc, c), repeat=5) for c in COUNTERS}  # type: ignore[misc]


@pytest.mark.parametrize("counter", list(COUNTERS))
def test_trim_messages_per_call(
    benchmark, counter: str, history: list[Message], langchain_us: dict[str, float]
) -> None:  # type: ignore[no-untyped-def]
    out = benchmark(langchain_trim, to_langchain(history), counter)
    assert [m.content for m in out] == [m.text for m in SlidingWindow(MAX_TOKENS, counter=COUNTER).apply(history)]
    benchmark.extra_info.update(messages=len(history), per_call_us=round(langchain_us[counter], 1))
    print(f"\ntrim_messages ({counter} counter) on {len(history)} messages: {langchain_us[counter]:,.0f} us per call")


@pytest.mark.parametrize("name", list(STRATEGIES))
def test_strategy_per_call(benchmark, name: str, history: list[Message], langchain_us: dict[str, float]) -> None:  # type: ignore[no-untyped-def]
    strategy = STRATEGIES[name]()
    out = benchmark(strategy.apply, history)
    assert 0 < len(out) < len(history)
    ours = best_us(lambda: strategy.apply(history), REPEAT[name])
    speedup = {c: langchain_us[c] / ours for c in COUNTERS}
    benchmark.extra_info.update(
        messages=len(history),
        per_call_us=round(ours, 1),
        trim_messages_us=round(langchain_us["tiktoken"], 1),
        speedup=round(speedup["tiktoken"], 1),
        speedup_vs_memoized_counter=round(speedup["memoized"], 1),
    )
    print(
        f"\n{name} on {len(history)} messages: {ours:,.1f} us per call; trim_messages is "
        f"{speedup['tiktoken']:,.1f}x slower ({langchain_us['tiktoken']:,.0f} us), "
        f"{speedup['memoized']:,.2f}x with a memoized counter ({langchain_us['memoized']:,.0f} us)"
    )


def _replay(apply: Callable[[list[Any]], list[Any]], ms: list[Any], turns: list[int]) -> int:
    """The requests of a replay: the history before each assistant turn in `turns`; returns the messages sent."""
    return sum(len(apply(ms[:i])) for i in turns)


@pytest.mark.parametrize("name", [*STRATEGIES, "trim_messages"])
def test_replay(benchmark, name: str, history: list[Message]) -> None:  # type: ignore[no-untyped-def]
    turns = [i for i, m in enumerate(history) if m.role == "assistant"][::REPLAY_STRIDE]
    if name == "trim_messages":
        ms: list[Any] = to_langchain(history)
        apply: Callable[[list[Any]], list[Any]] = langchain_trim
    else:
        ms, apply = history, STRATEGIES[name]().apply
    start = time.perf_counter()
    sent = benchmark.pedantic(_replay, args=(apply, ms, turns), rounds=1, iterations=1)
    seconds = time.perf_counter() - start
    assert 0 < sent < sum(turns), "every strategy crops this long history: fewer messages than it was given"
    benchmark.extra_info.update(calls=len(turns), messages_sent=sent, per_call_us=round(seconds / len(turns) * 1e6, 1))
    print(f"\nreplay through {name}: {len(turns)} calls, {seconds * 1e6 / len(turns):,.1f} us per call")
