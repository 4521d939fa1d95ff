"""Tool-call units: the partition, its views and local look-ups agree; `orphans` is what a provider rejects."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from memlab.messages import Message, ToolCall
from memlab.units import message_units, orphans, unit_end_at, unit_spans, unit_start_at


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


def rejected(ms: list[Message]) -> list[int]:
    """A provider's check, message by message: each result answers a still unanswered call of the
    call message it follows through answered results only; a call is rejected when an id stays unanswered."""
    answered_by: dict[int, set[str]] = {}  # call index -> the ids its results answered
    bad = []
    for i, m in enumerate(ms):
        if m.role != "tool":
            continue
        j = i - 1
        while j >= 0 and ms[j].role == "tool" and j not in bad:
            j -= 1
        head = ms[j] if j >= 0 else None
        ids = {c.id for c in head.tool_calls} if head and head.role == "assistant" else set()
        if m.tool_call_id in ids - answered_by.get(j, set()):
            answered_by.setdefault(j, set()).add(m.tool_call_id or "")
        else:
            bad.append(i)
    for j, m in enumerate(ms):
        if m.role == "assistant" and m.tool_calls and {c.id for c in m.tool_calls} - answered_by.get(j, set()):
            bad.append(j)
    return sorted(bad)


@given(histories)
def test_orphans_are_what_a_provider_rejects(ms: list[Message]) -> None:
    assert orphans(ms) == rejected(ms)


@given(histories)
def test_the_unit_views_give_one_answer(ms: list[Message]) -> None:
    assert message_units(ms) == [ms[s:e] for s, e in unit_spans(ms)]
    assert [m for u in message_units(ms) for m in u] == ms


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
    assert orphans([call("a"), result("a"), result("a")]) == [2]  # one result per call: the second is an orphan
    assert unit_spans([call("a"), result("a"), result("a")]) == [(0, 2), (2, 3)]
    assert orphans([call("a", "b"), result("a"), result("a"), result("b")]) == [0, 2, 3]
