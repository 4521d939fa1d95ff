"""Tool-call units: the forward partition and the local look-ups agree, and `orphans` finds broken pieces."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from memlab.context.units import orphans, unit_end_at, unit_spans, unit_start_at
from memlab.messages import Message, ToolCall


def call(*ids: str) -> Message:
    return Message("assistant", None, tool_calls=tuple(ToolCall(i, "f") for i in ids))


def result(i: str) -> Message:
    return Message("tool", "ok", tool_call_id=i)


# Random histories mixing text, calls with one or two ids, results for known or unknown ids.
_piece = st.one_of(
    st.builds(lambda r: Message(r, "text"), st.sampled_from(["system", "user", "assistant"])),
    st.builds(call, st.sampled_from(["a", "b"])),
    st.builds(call, st.just("a"), st.just("b")),
    st.builds(result, st.sampled_from(["a", "b", "z"])),
)
histories = st.lists(_piece, max_size=14)


@given(histories)
def test_spans_partition_the_history_and_local_lookups_agree(ms: list[Message]) -> None:
    spans = unit_spans(ms)
    assert [i for s, e in spans for i in range(s, e)] == list(range(len(ms)))
    for start, end in spans:
        for i in range(start, end):
            assert (unit_start_at(ms, i), unit_end_at(ms, i)) == (start, end)


@given(histories)
def test_a_history_cut_at_unit_boundaries_has_no_new_orphans(ms: list[Message]) -> None:
    bad = set(orphans(ms))
    for start, end in unit_spans(ms):
        piece = ms[start:end]
        assert bool(orphans(piece)) == (start in bad)


def test_orphans_on_hand_made_cases() -> None:
    assert orphans([Message("user", "hi"), call("a"), result("a"), Message("assistant", "done")]) == []
    assert orphans([call("a", "b"), result("a"), result("b")]) == []
    assert orphans([call("a", "b"), result("a")]) == [0]  # one result missing
    assert orphans([Message("user", "hi"), result("a")]) == [1]  # no call before it
    assert orphans([call("a"), Message("user", "?"), result("a")]) == [0, 2]  # results must follow the call directly
    assert orphans([call("a"), result("b")]) == [0, 1]
