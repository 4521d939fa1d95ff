"""Compressors A, B and C of the second design document, and the pairing rule they all keep."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memlab.errors import MemlabError
from memlab.llm import TASK_CONTEXT_SUMMARY, ExtractiveChatModel
from memlab.memory import (
    HybridMemoryCompressor,
    InMemoryAgentMemory,
    MemorySnapshot,
    TaskSegmentedCompressor,
    WindowedMemoryCompressor,
    summarized_count,
)
from memlab.messages import FunctionCall, FunctionCallOutput, Item, MessageItem
from memlab.tokens import get_counter
from memlab.trace import FALLBACK, LLM_CALL, MEMORY_COMPRESS, SUMMARY, recording
from memlab.units import item_units


def users(n: int, start: int = 1) -> list[Item]:
    return [MessageItem("user", f"m{i}") for i in range(start, start + n)]


def test_windowed_keeps_the_newest_items() -> None:
    snap = MemorySnapshot.of(users(25), "kept as is")
    out = WindowedMemoryCompressor(20).compress(snap)
    assert out == MemorySnapshot.of(users(20, start=6), "kept as is")
    assert WindowedMemoryCompressor(30).compress(snap) is snap


@pytest.mark.parametrize("max_items", [0, -1])
def test_windowed_refuses_a_window_it_cannot_keep(max_items: int) -> None:
    """Built from Python, where no config schema checks the range first: the schema's range, checked here."""
    said = rf"WindowedMemoryCompressor.max_items={max_items} is out of range; valid: >= 1"
    with pytest.raises(MemlabError, match=said):
        WindowedMemoryCompressor(max_items)


def test_hybrid_without_a_model_is_the_documents_sample() -> None:
    out = HybridMemoryCompressor(max_items=5).compress(MemorySnapshot.of(users(7)))
    assert out == MemorySnapshot.of(users(5, start=3), "[压缩] 历史片段条数=2")
    again = HybridMemoryCompressor(max_items=5).compress(MemorySnapshot.of(users(8), "earlier"))
    assert again.summary == "earlier\n[压缩] 历史片段条数=3" and summarized_count(again.summary) == 3


def test_hybrid_with_a_model_summarizes_what_it_drops(scripted: Any) -> None:
    dropped = [
        MessageItem("user", "My name is Ada and I fly from Oslo every Monday. Hi! How are you today? Fine, thanks."),
        MessageItem("assistant", "Noted, Ada. Great to hear. Anything else? Have a lovely day, and thanks again!"),
    ]
    snap = MemorySnapshot.of([*dropped, *users(3)], "The user wants aisle seats")
    model = ExtractiveChatModel(counter="estimate")
    with recording() as events:
        out = HybridMemoryCompressor(max_items=3, llm=model, max_tokens=20, counter="estimate").compress(snap)
    assert out.items == tuple(users(3)) and out.summary
    assert [e.data["task"] for e in events if e.kind == LLM_CALL] == [TASK_CONTEXT_SUMMARY]
    (summary,) = [e.data for e in events if e.kind == SUMMARY]
    assert (summary["layer"], summary["strategy"], summary["accepted"], summary["text"]) == (
        "compressor",
        "hybrid",
        True,
        out.summary,
    )
    assert summary["source_messages"] == 3  # the previous summary and the two dropped items
    assert summary["summary_tokens"] == get_counter("estimate").count_text(out.summary) + 4 < summary["source_tokens"]
    model = scripted("Ada flies from Oslo on Mondays.")
    HybridMemoryCompressor(max_items=3, llm=model).compress(snap)
    sent = model.asked[0][0][1].text
    assert "aisle seats" in sent and "every Monday" in sent and "m1" not in sent  # previous summary + dropped only


def test_hybrid_falls_back_to_counting_when_the_model_fails(scripted: Any) -> None:
    with recording() as events:
        out = HybridMemoryCompressor(max_items=2, llm=scripted(None)).compress(MemorySnapshot.of(users(5)))
    assert out.summary == "[压缩] 历史片段条数=3"
    assert [(e.kind, e.data["fallback"]) for e in events if e.kind == SUMMARY] == [(SUMMARY, "count")]
    assert [(e.kind, e.data["action"]) for e in events if e.kind == FALLBACK] == [(FALLBACK, "count")]


def exchange(cid: str, parallel: int = 1) -> list[Item]:
    calls: list[Item] = [FunctionCall(f"{cid}{k}", "tool") for k in range(parallel)]
    return calls + [FunctionCallOutput(f"{cid}{k}", "ok") for k in range(parallel)]


def test_window_never_separates_a_call_from_its_output() -> None:
    items = [*users(2), *exchange("a", 3), *users(1, start=3)]  # m1 m2 [a0 a1 a2 out out out] m3
    assert WindowedMemoryCompressor(4).compress(MemorySnapshot.of(items)).items == (items[-1],)
    assert WindowedMemoryCompressor(7).compress(MemorySnapshot.of(items)).items == tuple(items[2:])
    pending = [*users(3), FunctionCall("p", "slow"), MessageItem("assistant", "waiting"), FunctionCall("q", "x")]
    assert WindowedMemoryCompressor(2).compress(MemorySnapshot.of(pending)).items == tuple(pending[3:])  # one open unit


@pytest.mark.parametrize("compressor", [WindowedMemoryCompressor(20), HybridMemoryCompressor(20)], ids=["A", "B"])
def test_a_call_never_answered_does_not_hold_the_window_open(compressor: Any) -> None:
    """The defect: the pending call kept every later item in its unit, 101 items kept by a window of 20."""
    memory = InMemoryAgentMemory(compressor)
    memory.add_user_input("start")
    memory.add_output_items([FunctionCall("c1", "search")])  # its output never arrives
    for i in range(100):
        memory.add_user_input(f"u{i}")
    assert memory.get_items() == [MessageItem("user", f"u{i}") for i in range(80, 100)]
    waiting = [FunctionCall("p", "slow"), MessageItem("assistant", "waiting"), FunctionCall("q", "x")]
    assert [len(u) for u in item_units([*waiting, *users(2)])] == [3, 1, 1]  # the user input abandons p and q


def test_per_task_keeps_the_live_task_and_a_summary_per_finished_one(scripted: Any) -> None:
    items = [
        MessageItem("user", "Cancel reservation ABC123"),
        *exchange("c"),
        MessageItem("assistant", "Cancelled ABC123"),
        MessageItem("user", "Now book Oslo to Rome"),
        *exchange("b"),
        MessageItem("user", "And add a bag"),
        MessageItem("assistant", "Which flight?"),
    ]
    compressor = TaskSegmentedCompressor()
    assert [len(t) for t in compressor.segments(items)] == [4, 3, 2]
    out = compressor.compress(MemorySnapshot.of(items))
    assert out.items == tuple(items[-2:])
    assert out.summary == "[Sub-task 1] [压缩] 历史片段条数=4\n[Sub-task 2] [压缩] 历史片段条数=3"
    later = compressor.compress(MemorySnapshot.of([*out.items, MessageItem("user", "Thanks")], out.summary))
    assert later.summary and later.summary.splitlines()[-1] == "[Sub-task 3] [压缩] 历史片段条数=2"
    model = scripted("Cancelled ABC123.")
    TaskSegmentedCompressor(keep_tasks=2, llm=model).compress(MemorySnapshot.of(items))
    ((prompt, _task),) = model.asked
    assert "ABC123" in prompt[1].text and "Rome" not in prompt[1].text  # each sub-task from its own items only
    with pytest.raises(ValueError, match="keep_tasks"):
        TaskSegmentedCompressor(keep_tasks=0)


def test_every_compression_emits_one_event() -> None:
    memory = InMemoryAgentMemory(HybridMemoryCompressor(max_items=3))
    with recording() as events:
        for i in range(5):
            memory.add_user_input(f"m{i}")
    compress = [e.data for e in events if e.kind == MEMORY_COMPRESS]
    assert [(d["before_items"], d["after_items"], d["summary_length"]) for d in compress] == [
        (4, 3, len("[压缩] 历史片段条数=1")),
        (4, 3, len("[压缩] 历史片段条数=1\n[压缩] 历史片段条数=1")),
    ]
    assert compress[0]["compressor"] == "HybridMemoryCompressor" and compress[0]["latency_us"] >= 0


@st.composite
def item_lists(draw: Any) -> list[Item]:
    items: list[Item] = []
    for n in range(draw(st.integers(0, 12))):
        kind = draw(st.sampled_from(["user", "assistant", "calls"]))
        if kind == "calls":
            ids = [f"{n}.{k}" for k in range(draw(st.integers(1, 3)))]
            items.extend(FunctionCall(i, "f") for i in ids)
            for i in draw(st.permutations(ids)):
                items.append(FunctionCallOutput(i, "out"))
        else:
            items.append(MessageItem(kind, f"{kind} {n}"))
    if draw(st.booleans()):
        items.append(FunctionCall("pending", "f"))  # its output has not arrived yet
    return items


def _pairs_kept(out: Sequence[Item], whole: Sequence[Item]) -> bool:
    calls = {i.call_id for i in out if isinstance(i, FunctionCall)}
    outputs = {i.call_id for i in out if isinstance(i, FunctionCallOutput)}
    answered = {i.call_id for i in whole if isinstance(i, FunctionCallOutput)}
    return outputs <= calls and calls & answered <= outputs


@settings(max_examples=150)
@given(item_lists(), st.integers(1, 8))
def test_no_compressor_separates_calls_from_outputs(items: list[Item], max_items: int) -> None:
    snap = MemorySnapshot.of(items)
    for compressor in (
        WindowedMemoryCompressor(max_items),
        HybridMemoryCompressor(max_items),
        TaskSegmentedCompressor(),
    ):
        out = compressor.compress(snap)
        assert snap.items == tuple(items)
        assert _pairs_kept(out.items, items), type(compressor).__name__
        assert out.items == snap.items[len(snap.items) - len(out.items) :]  # a suffix
    window = WindowedMemoryCompressor(max_items).compress(snap).items
    last_unit = item_units(items)[-1] if items else []
    assert len(window) <= max(max_items, len(last_unit))
    hybrid = HybridMemoryCompressor(max_items).compress(snap)
    assert summarized_count(hybrid.summary) + len(hybrid.items) == len(items)
