"""SLIDING_WINDOW against langchain-core's `trim_messages` on every LoCoMo conversation and budget.

Both sides get the same per-message, additive token count; langchain's is computed here from
tiktoken directly (the chat format's 3 tokens of framing, the role, the content, the name), independently
of memlab's cached counter, so the test also checks that the two counts agree.
"""

from __future__ import annotations

import functools

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, trim_messages

from memlab.context import SlidingWindow
from memlab.messages import Message
from memlab.tokens import CHAT_TOKENS_PER_MESSAGE, CHAT_TOKENS_PER_NAME, get_counter, load_encoding

BUDGETS = [0, 1, 10, 50, 100, 200, 500, 1_000, 2_000, 4_000, 8_000, 16_000, 10**6]
SYSTEM_PROMPT = "You are a helpful assistant who remembers what the user told you."
_LC_CLASS = {"system": SystemMessage, "user": HumanMessage, "assistant": AIMessage}
_LC_ROLE = {"system": "system", "human": "user", "ai": "assistant"}


def to_langchain(ms: list[Message]) -> list[BaseMessage]:
    """langchain messages whose `id` is the position in `ms`, so results compare by position."""
    return [_LC_CLASS[m.role](content=m.text, name=m.name, id=str(i)) for i, m in enumerate(ms)]


@functools.cache
def _tiktoken_count(role: str, text: str, name: str | None) -> int:
    enc = load_encoding("cl100k_base")
    named = CHAT_TOKENS_PER_NAME + len(enc.encode(name)) if name else 0
    return CHAT_TOKENS_PER_MESSAGE + len(enc.encode(role)) + len(enc.encode(text)) + named


def _estimate_count(role: str, text: str, name: str | None) -> int:
    return int(len(text) / 2.5) + 4


COUNTS = {"cl100k_base": _tiktoken_count, "estimate": _estimate_count}


def langchain_counter(spec: str):  # type: ignore[no-untyped-def]
    per_message = COUNTS[spec]

    def count(messages: list[BaseMessage]) -> int:
        return sum(per_message(_LC_ROLE[m.type], str(m.content), m.name) for m in messages)

    return count


@pytest.mark.parametrize("spec", ["cl100k_base", "estimate"])
@pytest.mark.parametrize("with_system", [False, True])
def test_sliding_window_equals_trim_messages(locomo: list[list[Message]], spec: str, with_system: bool) -> None:
    counter = get_counter(spec)
    lc_count = langchain_counter(spec)
    compared = 0
    for conversation in locomo:
        history = ([Message("system", SYSTEM_PROMPT)] if with_system else []) + conversation
        for length in (len(history) // 3, len(history)):  # a replay's early and final requests
            ms = history[:length]
            lc = to_langchain(ms)
            position = {id(m): i for i, m in enumerate(ms)}
            assert [counter.count(m) for m in ms[:50]] == [lc_count([x]) for x in lc[:50]]
            for budget in BUDGETS:
                ours = SlidingWindow(max_tokens=budget, counter=counter, keep_system=True).apply(ms)
                theirs = trim_messages(
                    lc, max_tokens=budget, token_counter=lc_count, strategy="last", include_system=True
                )
                assert [position[id(m)] for m in ours] == [int(str(m.id)) for m in theirs], (spec, length, budget)
                compared += 1
    assert compared == len(locomo) * 2 * len(BUDGETS)
