"""TRIM: the document's example, an independent reference on random inputs, whole tool-call units."""

from __future__ import annotations

import copy

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memlab.context import Trim
from memlab.errors import MemlabError
from memlab.messages import Message, ToolCall
from memlab.units import orphans


def numbered(n: int) -> list[Message]:
    return [Message("user" if i % 2 else "assistant", str(i), id=str(i)) for i in range(1, n + 1)]


def reference(messages: list, keep_first: int, keep_last: int) -> list:
    """Keep position i when it is among the first keep_first or the last keep_last (an index rule)."""
    n = len(messages)
    return [m for i, m in enumerate(messages) if i < keep_first or i >= n - keep_last]


def test_the_design_documents_example() -> None:
    out = Trim(keep_first=2, keep_last=3).apply(numbered(10))
    assert [m.content for m in out] == ["1", "2", "8", "9", "10"]


@given(n=st.integers(0, 40), keep_first=st.integers(0, 12), keep_last=st.integers(0, 12))
def test_trim_matches_the_reference_on_random_inputs(n: int, keep_first: int, keep_last: int) -> None:
    ms = numbered(n)
    assert Trim(keep_first, keep_last).apply(ms) == reference(ms, keep_first, keep_last)


@given(n=st.integers(0, 20), keep_first=st.integers(0, 6), keep_last=st.integers(0, 6))
def test_trim_accepts_openai_dicts_and_leaves_them_unchanged(n: int, keep_first: int, keep_last: int) -> None:
    dicts = [m.to_openai() for m in numbered(n)]
    before = copy.deepcopy(dicts)
    out = Trim(keep_first, keep_last).apply(dicts)
    assert dicts == before
    assert out == reference(before, keep_first, keep_last)  # dicts in, the caller's dicts out


def test_a_cut_inside_a_tool_call_unit_takes_the_whole_unit() -> None:
    call = Message("assistant", None, tool_calls=(ToolCall("c1", "search"), ToolCall("c2", "search")))
    ms = [
        Message("system", "policy"),
        Message("user", "find flights"),
        call,
        Message("tool", "r1", tool_call_id="c1"),
        Message("tool", "r2", tool_call_id="c2"),
        Message("assistant", "found two"),
        Message("user", "book the first"),
        Message("assistant", "booked"),
    ]
    assert Trim(keep_first=3, keep_last=2).apply(ms) == ms[:5] + ms[6:]  # head grows to the unit's end
    assert Trim(keep_first=1, keep_last=5).apply(ms) == ms[:1] + ms[2:]  # tail grows back to the call
    for kf in range(len(ms) + 1):
        for kl in range(len(ms) + 1):
            out = Trim(kf, kl).apply(ms)
            assert orphans(out) == []
            assert set(reference(list(range(len(ms))), kf, kl)) <= {ms.index(m) for m in out}


@pytest.mark.parametrize("bad", [{"keep_first": -1}, {"keep_last": 1.5}, {"keep_first": True}])
def test_bad_counts_name_the_key(bad: dict) -> None:
    with pytest.raises(MemlabError, match=next(iter(bad))):
        Trim(**bad)
