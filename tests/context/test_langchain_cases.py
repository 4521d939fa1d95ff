"""langchain-core's published `trim_messages(strategy="last")` cases, re-expressed on memlab messages.

Each case is one test of langchain-core's `tests/unit_tests/messages/test_utils.py` (named in
`CASES`): its messages, options and expected result, written as memlab messages, memlab roles and
the expected (id, text) pairs. SLIDING_WINDOW with the same options must return the expectation;
langchain-core's real `trim_messages`, run on the same messages converted by memlab's peer
adapter with the same counts, must return it too (or, for the tool-group cases that langchain
fixed after the installed version, is shown to break the tool-call unit that memlab keeps whole).

Two of langchain's messages hold two content blocks; memlab content is text, so they are two
lines here, and langchain's block counter (3 + 4 per block + 3) becomes 3 + 4 per line + 3.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import pytest

from memlab.context import SlidingWindow
from memlab.context.peers.langchain import LANGCHAIN_TYPES, from_langchain, to_langchain
from memlab.context.sliding_window import split_words
from memlab.messages import Message, ToolCall
from memlab.units import orphans

lc_utils = pytest.importorskip("langchain_core.messages.utils")


class PerMessage:
    """A memlab TokenCounter from a per-message function (the cases' counters are per message)."""

    name = "case"

    def __init__(self, fn: Callable[[Message], int]) -> None:
        self.fn = fn

    def count_text(self, text: str) -> int:
        return self.fn(Message("user", text))

    def count(self, message: Message) -> int:
        return self.fn(message)

    def count_request(self, messages: Iterable[Message]) -> int:
        return sum(map(self.fn, messages))


def blocks(m: Message) -> int:
    """langchain's dummy_token_counter: 3 + 4 per content block + 3 (a block is a line here)."""
    return 3 + 4 * len(m.text.split("\n")) + 3


def approximate(m: Message) -> int:
    """langchain's count_tokens_approximately, from its documented rule: ceil((chars + role chars) / 4) + 3."""
    return math.ceil((len(m.text) + len(m.role)) / 4) + 3


def chars(m: Message) -> int:
    return len(m.text)


def words(m: Message) -> int:
    """The case's count_words: pieces between single spaces."""
    return len(m.text.split(" "))


FOUR = "This is a 4 token text."
TO_TRIM = [
    Message("system", FOUR, id="system"),
    Message("user", FOUR, id="first"),
    Message("assistant", "This is the FIRST 4 token block.\nThis is the SECOND 4 token block.", id="second"),
    Message("user", FOUR, id="third"),
    Message("assistant", FOUR, id="fourth"),
]
WEATHER_CALL = Message(
    "assistant",
    "let's check the weather in florida",
    tool_calls=(ToolCall("abc123", "get_weather", '{"location": "florida"}'),),
    id="call",
)
TOOL_CALL_MESSAGES = [
    Message("user", "hi", id="hi"),
    Message("assistant", "hello", id="hello"),
    Message("user", "what's the weather in florida?", id="ask"),
    WEATHER_CALL,
    Message("tool", "It's sunny.", tool_call_id="abc123", name="get_weather", id="result"),
]


def tool_blocks(m: Message) -> int:
    """dummy_token_counter on _TOOL_CALL_MESSAGES: the call message has two blocks (text, tool_use)."""
    return 14 if m.id == "call" else blocks(m)


@dataclass(frozen=True)
class Case:
    messages: list[Message]
    max_tokens: int
    count: Callable[[Message], int]
    expected: list[tuple[str | None, str]]  # (id, text) of each message returned
    options: dict[str, Any] = field(default_factory=dict)
    text_splitter: str = "lines"
    fixed_after_installed: bool = False  # a tool-group case of langchain-core newer than 1.8.3


def ids(*names: str, of: list[Message] = TO_TRIM) -> list[tuple[str | None, str]]:
    by_id = {m.id: m for m in of}
    return [(n, by_id[n].text) for n in names]


SECOND_BLOCK = ("second", "This is the SECOND 4 token block.")
CASES = {
    "test_trim_messages_last_30_include_system": Case(
        TO_TRIM, 30, blocks, ids("system", "third", "fourth"), {"include_system": True}
    ),
    "test_trim_messages_last_40_include_system_allow_partial": Case(
        TO_TRIM,
        40,
        blocks,
        [*ids("system"), SECOND_BLOCK, *ids("third", "fourth")],
        {"include_system": True, "allow_partial": True},
    ),
    "test_trim_messages_last_30_include_system_allow_partial_end_on_human": Case(
        TO_TRIM,
        30,
        blocks,
        [*ids("system"), SECOND_BLOCK, *ids("third")],
        {"include_system": True, "allow_partial": True, "end_on": "user"},
    ),
    "test_trim_messages_last_40_include_system_allow_partial_start_on_human": Case(
        TO_TRIM,
        30,
        blocks,
        ids("system", "third", "fourth"),
        {"include_system": True, "allow_partial": True, "start_on": "user"},
    ),
    "test_trim_messages_last_allow_partial_one_message": Case(
        [Message("user", "This is a funky text.", id="third")],
        2,
        chars,
        [("third", "t.")],
        {"allow_partial": True},
        text_splitter="chars",
    ),
    "test_trim_messages_allow_partial_text_splitter": Case(
        TO_TRIM,
        10,
        words,
        [("third", "a 4 token text."), *ids("fourth")],
        {"allow_partial": True},
        text_splitter="words",
    ),
    "test_trim_messages_include_system_strategy_last_empty_messages": Case(
        [], 10, blocks, [], {"include_system": True}
    ),
    "test_trim_messages_invoke": Case(TO_TRIM, 10, blocks, ids("fourth")),
    "test_trim_messages_start_on_with_allow_partial": Case(
        [
            Message("user", "First human message", id="h1"),
            Message("assistant", "AI response", id="a1"),
            Message("user", "Second human message", id="h2"),
        ],
        20,
        blocks,
        [("h2", "Second human message")],
        {"allow_partial": True, "start_on": "user"},
    ),
    "test_trim_messages_token_counter_shortcut_approximate": Case(
        [
            Message("system", "This is a test message", id="s"),
            Message("user", "Another test message", id="first"),
            Message("assistant", "AI response here", id="second"),
        ],
        50,
        approximate,
        [("s", "This is a test message"), ("first", "Another test message"), ("second", "AI response here")],
    ),
    "test_trim_messages_token_counter_shortcut_with_options": Case(
        [
            Message("system", "System instructions", id="s"),
            Message("user", "First human message", id="first"),
            Message("assistant", "First AI response", id="ai1"),
            Message("user", "Second human message", id="second"),
            Message("assistant", "Second AI response", id="ai2"),
        ],
        100,
        approximate,
        [
            ("s", "System instructions"),
            ("first", "First human message"),
            ("ai1", "First AI response"),
            ("second", "Second human message"),
            ("ai2", "Second AI response"),
        ],
        {"include_system": True, "start_on": "user"},
    ),
    "test_trim_messages_tool_group_never_split_last": Case(
        TOOL_CALL_MESSAGES, 15, tool_blocks, [], fixed_after_installed=True
    ),
    "test_trim_messages_tool_group_included_together_last": Case(
        TOOL_CALL_MESSAGES, 25, tool_blocks, ids("call", "result", of=TOOL_CALL_MESSAGES)
    ),
    "test_trim_messages_tool_group_with_include_system": Case(
        [Message("system", "You are a helpful assistant.", id="s"), *TOOL_CALL_MESSAGES],
        35,
        tool_blocks,
        [("s", "You are a helpful assistant."), *ids("call", "result", of=TOOL_CALL_MESSAGES)],
        {"include_system": True},
    ),
    "test_trim_messages_tool_group_start_on_human": Case(TOOL_CALL_MESSAGES, 25, tool_blocks, [], {"start_on": "user"}),
    "test_trim_messages_multiple_tool_groups": Case(
        [
            Message("user", "query 1", id="q1"),
            Message("assistant", "calling tool A", tool_calls=(ToolCall("a1", "A"),), id="ca"),
            Message("tool", "result A", tool_call_id="a1", id="ra"),
            Message("user", "query 2", id="q2"),
            Message("assistant", "calling tool B", tool_calls=(ToolCall("b1", "B"),), id="cb"),
            Message("tool", "result B", tool_call_id="b1", id="rb"),
        ],
        35,
        blocks,
        [("q2", "query 2"), ("cb", "calling tool B"), ("rb", "result B")],
    ),
    "test_trim_messages_tool_group_boundary_exact_fit": Case(
        TOOL_CALL_MESSAGES, 24, tool_blocks, ids("call", "result", of=TOOL_CALL_MESSAGES)
    ),
}


def pairs(ms: list[Message]) -> list[tuple[str | None, str]]:
    return [(m.id, m.text) for m in ms]


@pytest.mark.parametrize("name", CASES)
def test_sliding_window_returns_langchains_published_result(name: str) -> None:
    case = CASES[name]
    window = SlidingWindow(
        max_tokens=case.max_tokens,
        counter=PerMessage(case.count),
        keep_system=case.options.get("include_system", False),
        start_on=case.options.get("start_on"),
        end_on=case.options.get("end_on"),
        allow_partial=case.options.get("allow_partial", False),
        text_splitter=case.text_splitter,
    )
    out = window.apply(case.messages)
    assert pairs(out) == case.expected
    assert orphans(out) == []


def run_langchain(case: Case) -> list[Message]:
    """langchain-core's own trim_messages on the case, through memlab's conversion and the same counts."""
    lc = [to_langchain(m, str(i)) for i, m in enumerate(case.messages)]
    position = {str(i): m for i, m in enumerate(case.messages)}

    def back(obj: Any) -> Message:
        m = position[obj.id]
        return m if obj.content == m.text else m.with_content(obj.content)

    splitters = {"lines": None, "words": split_words, "chars": list}
    options = {k: LANGCHAIN_TYPES.get(v, v) if k in ("start_on", "end_on") else v for k, v in case.options.items()}
    if splitters[case.text_splitter] is not None:
        options["text_splitter"] = splitters[case.text_splitter]
    counter = "approximate" if case.count is approximate else (lambda ms: sum(case.count(back(m)) for m in ms))
    out = lc_utils.trim_messages(lc, max_tokens=case.max_tokens, token_counter=counter, strategy="last", **options)
    assert all(from_langchain(o).role == back(o).role for o in out)
    return [back(o) for o in out]


@pytest.mark.parametrize("name", CASES)
def test_langchain_returns_its_published_result_on_memlab_messages(name: str) -> None:
    case = CASES[name]
    out = run_langchain(case)
    if case.fixed_after_installed and not hasattr(lc_utils, "_get_message_group_boundaries"):
        # Before the tool-group fix trim_messages keeps the tool result and drops its call.
        assert pairs(out) == [("result", "It's sunny.")] and orphans(out) == [0]
    else:
        assert pairs(out) == case.expected
