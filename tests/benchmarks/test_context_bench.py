"""Context strategies per call on a 600-message LoCoMo history, and over a whole replay, beside
langchain-core's `trim_messages` (strategy="last", include_system=True) with the same tiktoken counter.

memlab's strategies count with its cached cl100k_base counter (each message tokenized once per
run, as in a replay); `trim_messages` gets the same per-message tiktoken count as a plain
function, which it calls afresh on every request. Each benchmark stores, and prints, its own
best time per call and its speed-up over `trim_messages` (`benchmark.extra_info`). Run with
``pytest tests/benchmarks/test_context_bench.py --benchmark-enable -s``.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, trim_messages

from memlab.context import Composite, ContextStrategy, SlidingWindow, Summarize, Trim
from memlab.llm import ExtractiveChatModel
from memlab.messages import Message
from memlab.tokens import CHAT_TOKENS_PER_MESSAGE, get_counter, load_encoding

HISTORY = 600
MAX_TOKENS = 4_000
COUNTER = "cl100k_base"
SYSTEM_PROMPT = "You are a helpful assistant who remembers what the user told you."
_LC_CLASS = {"system": SystemMessage, "user": HumanMessage, "assistant": AIMessage}
_LC_ROLE = {"system": "system", "human": "user", "ai": "assistant"}


def _longest_locomo_conversation(path: Path) -> list[Message]:
    best: list[Message] = []
    for sample in json.loads(path.read_text()):
        conv = sample["conversation"]
        keys = sorted(
            (k for k in conv if k.startswith("session_") and isinstance(conv[k], list)), key=lambda k: int(k[8:])
        )
        msgs = [
            Message(
                "user" if t["speaker"] == conv["speaker_a"] else "assistant",
                t["text"],
                id=t["dia_id"],
                speaker=t["speaker"],
            )
            for k in keys
            for t in conv[k]
        ]
        best = max(best, msgs, key=len)
    return best


@pytest.fixture(scope="module")
def history(locomo_path: Path) -> list[Message]:
    """The system prompt and the first 599 turns of the longest LoCoMo conversation, counted once."""
    conversation = _longest_locomo_conversation(locomo_path)
    assert len(conversation) >= HISTORY - 1
    ms = [Message("system", SYSTEM_PROMPT), *conversation[: HISTORY - 1]]
    get_counter(COUNTER).count_messages(ms)  # a replay has counted every earlier message already
    return ms


def tiktoken_per_message(messages: list[BaseMessage]) -> int:
    """memlab's cl100k_base chat count (3 framing tokens + role + content), uncached, for langchain."""
    enc = load_encoding(COUNTER)
    return sum(
        CHAT_TOKENS_PER_MESSAGE + len(enc.encode(_LC_ROLE[m.type])) + len(enc.encode(str(m.content))) for m in messages
    )


def langchain_trim(ms: list[BaseMessage]) -> list[BaseMessage]:
    return trim_messages(
        ms, max_tokens=MAX_TOKENS, token_counter=tiktoken_per_message, strategy="last", include_system=True
    )


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
def langchain_us(history: list[Message]) -> float:
    lc = [_LC_CLASS[m.role](content=m.text) for m in history]
    return best_us(lambda: langchain_trim(lc), repeat=5)


def test_trim_messages_per_call(benchmark, history: list[Message], langchain_us: float) -> None:  # type: ignore[no-untyped-def]
    lc = [_LC_CLASS[m.role](content=m.text) for m in history]
    out = benchmark(langchain_trim, lc)
    assert [m.content for m in out] == [m.text for m in SlidingWindow(MAX_TOKENS, counter=COUNTER).apply(history)]
    benchmark.extra_info.update(messages=len(history), per_call_us=round(langchain_us, 1))
    print(f"\ntrim_messages on {len(history)} messages: {langchain_us:,.0f} us per call")


@pytest.mark.parametrize("name", list(STRATEGIES))
def test_strategy_per_call(benchmark, name: str, history: list[Message], langchain_us: float) -> None:  # type: ignore[no-untyped-def]
    strategy = STRATEGIES[name]()
    out = benchmark(strategy.apply, history)
    assert 0 < len(out) < len(history)
    ours = best_us(lambda: strategy.apply(history), REPEAT[name])
    speedup = langchain_us / ours
    benchmark.extra_info.update(
        messages=len(history),
        per_call_us=round(ours, 1),
        trim_messages_us=round(langchain_us, 1),
        speedup=round(speedup, 1),
    )
    print(
        f"\n{name} on {len(history)} messages: {ours:,.1f} us per call, "
        f"{speedup:,.1f}x trim_messages ({langchain_us:,.0f} us)"
    )


def _replay(apply: Callable[[list[Any]], list[Any]], ms: list[Any], turns: list[int]) -> int:
    """The requests of a replay: the history before each assistant turn in `turns`; returns the messages sent."""
    return sum(len(apply(ms[:i])) for i in turns)


@pytest.mark.parametrize("name", [*STRATEGIES, "trim_messages"])
def test_replay(benchmark, name: str, history: list[Message]) -> None:  # type: ignore[no-untyped-def]
    turns = [i for i, m in enumerate(history) if m.role == "assistant"][::REPLAY_STRIDE]
    if name == "trim_messages":
        ms: list[Any] = [_LC_CLASS[m.role](content=m.text) for m in history]
        apply: Callable[[list[Any]], list[Any]] = langchain_trim
    else:
        ms, apply = history, STRATEGIES[name]().apply
    start = time.perf_counter()
    sent = benchmark.pedantic(_replay, args=(apply, ms, turns), rounds=1, iterations=1)
    seconds = time.perf_counter() - start
    assert sent > 0
    benchmark.extra_info.update(calls=len(turns), messages_sent=sent, per_call_us=round(seconds / len(turns) * 1e6, 1))
    print(f"\nreplay through {name}: {len(turns)} calls, {seconds * 1e6 / len(turns):,.1f} us per call")
