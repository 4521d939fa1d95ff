"""SLIDING_WINDOW: the document's worked example, the system head, tool-call units, reading only what it keeps."""

from __future__ import annotations

import copy
import math
from collections.abc import Sequence

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memlab.context import SlidingWindow
from memlab.messages import Message, ToolCall
from memlab.tokens import get_counter
from memlab.units import orphans


def sized(tokens: int, i: int, role: str = "user") -> Message:
    """A message the estimate counts as exactly `tokens` (int(chars / 2.5) + 4)."""
    return Message(role, "x" * math.ceil((tokens - 4) * 2.5), id=str(i))


def test_the_design_documents_worked_example() -> None:
    # msg[9] 120, msg[8] 200, msg[7] 180, msg[6] 250 -> 750; msg[5] 300 -> 1050 > 1000: stop.
    sizes = [10, 10, 10, 10, 10, 300, 250, 180, 200, 120]
    ms = [sized(t, i) for i, t in enumerate(sizes)]
    assert [get_counter("estimate").count(m) for m in ms] == sizes
    out = SlidingWindow(max_tokens=1000, keep_system=False).apply(ms)
    assert [m.id for m in out] == ["6", "7", "8", "9"]  # msg[0..4] would fit, but the walk stopped at msg[5]


def test_system_messages_are_kept_and_counted_first() -> None:
    ms = [sized(100, 0, "system"), *(sized(100, i) for i in range(1, 6))]
    assert [m.id for m in SlidingWindow(max_tokens=350).apply(ms)] == ["0", "4", "5"]
    assert [m.id for m in SlidingWindow(max_tokens=350, keep_system=False).apply(ms)] == ["3", "4", "5"]
    assert [m.id for m in SlidingWindow(max_tokens=50).apply(ms)] == ["0"]  # instructions alone exceed the budget


def test_a_tool_call_and_its_results_fit_together_or_not_at_all() -> None:
    call = Message("assistant", None, tool_calls=(ToolCall("c1", "f"), ToolCall("c2", "f")), id="call")
    ms = [
        sized(50, 0),
        call,
        Message("tool", "x" * 240, tool_call_id="c1", id="r1"),
        Message("tool", "x" * 240, tool_call_id="c2", id="r2"),
        sized(50, 4),
    ]
    counts = [get_counter("estimate").count(m) for m in ms]
    group = sum(counts[1:4])
    assert [m.id for m in SlidingWindow(max_tokens=counts[4] + group - 1).apply(ms)] == ["4"]
    assert [m.id for m in SlidingWindow(max_tokens=counts[4] + group).apply(ms)] == ["call", "r1", "r2", "4"]


@given(st.lists(st.integers(4, 60), max_size=30), st.integers(0, 800), st.booleans())
def test_window_is_the_longest_suffix_within_budget(sizes: list[int], budget: int, keep_system: bool) -> None:
    ms = [sized(t, i) for i, t in enumerate(sizes)]
    dicts = [m.to_openai() for m in ms]
    before = copy.deepcopy(dicts)
    out = SlidingWindow(max_tokens=budget, keep_system=keep_system).apply(dicts)
    assert dicts == before
    k = len(out)
    assert sum(sizes[len(sizes) - k :]) <= budget
    assert k == len(sizes) or sum(sizes[len(sizes) - k - 1 :]) > budget
    assert out == dicts[len(dicts) - k :]  # dicts in, the caller's dicts out


class Spy(Sequence[Message]):
    """A history that records which positions a strategy reads."""

    def __init__(self, ms: list[Message]) -> None:
        self.ms, self.read = ms, set()

    def __len__(self) -> int:
        return len(self.ms)

    def __getitem__(self, i):  # type: ignore[no-untyped-def, override]
        idx = range(len(self.ms))[i]
        self.read.update([idx] if isinstance(idx, int) else idx)
        return self.ms[i]


@pytest.mark.parametrize("keep", [0, 3, 40])
def test_each_call_reads_only_the_messages_it_keeps_plus_one(keep: int) -> None:
    ms = [sized(10, 0, "system"), *(sized(20, i) for i in range(1, 600))]
    spy = Spy(ms)
    out = SlidingWindow(max_tokens=10 + 20 * keep).apply(spy)
    assert len(out) == 1 + keep
    assert spy.read == {0, 1} | set(range(599 - keep, 600))  # the head, the first non-system, the window, one more


def test_tiktoken_counter_by_name() -> None:
    ms = [Message("user", "hello world " * 20, id=str(i)) for i in range(10)]
    exact = get_counter("cl100k_base")
    per = exact.count(ms[0])
    assert len(SlidingWindow(max_tokens=3 * per, counter="cl100k_base").apply(ms)) == 3
    assert len(SlidingWindow(max_tokens=3 * per, counter=exact).apply(ms)) == 3


def test_orphans_never_appear_for_a_long_tool_history() -> None:
    ms: list[Message] = [Message("system", "s")]
    for i in range(30):
        ms += [Message("user", f"q{i}"), Message("assistant", None, tool_calls=(ToolCall(f"c{i}", "f"),))]
        ms += [Message("tool", "r" * (i * 7), tool_call_id=f"c{i}"), Message("assistant", f"a{i}")]
    for budget in range(0, 2000, 7):
        assert orphans(SlidingWindow(max_tokens=budget).apply(ms)) == []
