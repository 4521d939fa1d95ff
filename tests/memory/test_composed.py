"""The section-11 compressors: a chain (window + summary + sub-tasks) and CodeAct's recent tool rounds."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from memlab.experiment import instantiate
from memlab.memory import (
    ChainCompressor,
    HybridMemoryCompressor,
    MemorySnapshot,
    TaskSegmentedCompressor,
    ToolRoundsCompressor,
    WindowedMemoryCompressor,
    summarized_count,
)
from memlab.messages import FunctionCall, FunctionCallOutput, Item, MessageItem
from memlab.units import item_units


def _trajectory(shape: list[int]) -> list[Item]:
    """Per step: a user message, then `n` tool calls answered by their outputs (n=0: a plain reply)."""
    items: list[Item] = []
    for step, calls in enumerate(shape):
        items.append(MessageItem("user", f"request {step}"))
        ids = [f"c{step}.{k}" for k in range(calls)]
        items += [FunctionCall(i, "run", "{}") for i in ids] + [FunctionCallOutput(i, f"out {i}") for i in ids]
        items.append(MessageItem("assistant", f"done {step}"))
    return items


@given(st.lists(st.integers(0, 3), max_size=12), st.integers(0, 4))
def test_tool_rounds_keep_the_newest_exchanges_whole_and_every_message(shape: list[int], keep: int) -> None:
    items = _trajectory(shape)
    out = ToolRoundsCompressor(keep_rounds=keep).compress(MemorySnapshot.of(items))
    rounds = [u for u in item_units(items) if isinstance(u[0], FunctionCall)]
    kept_rounds = rounds[max(len(rounds) - keep, 0) :] if keep else []
    assert [u for u in item_units(out.items) if isinstance(u[0], FunctionCall)] == kept_rounds
    assert [i for i in out.items if isinstance(i, MessageItem)] == [i for i in items if isinstance(i, MessageItem)]
    dropped = sum(len(u) for u in rounds) - sum(len(u) for u in kept_rounds)
    assert summarized_count(out.summary) == dropped  # no model: the document's counting summary


def _items(kinds: list[str]) -> list[Item]:
    """user / reply messages, calls and outputs (of the latest call: some calls stay pending, some outputs orphans)."""
    made: list[Item] = []
    for n, kind in enumerate(kinds):
        if kind == "call":
            made.append(FunctionCall(f"c{n}", "run"))
        elif kind == "output":
            made.append(FunctionCallOutput(f"c{n - 1}", "ok"))
        else:
            made.append(MessageItem("user" if kind == "user" else "assistant", f"{kind} {n}"))
    return made


KINDS = st.lists(st.sampled_from(["user", "reply", "call", "output"]), max_size=14)


@given(KINDS, KINDS, st.integers(0, 3))
def test_tool_rounds_settle_after_items_that_start_no_round(before: list[str], after: list[str], keep: int) -> None:
    """`settled_after` (items without a call) holds: what compress returned it returns unchanged with them appended."""
    compressor = ToolRoundsCompressor(keep_rounds=keep)
    added = _items(after)
    settled = compressor.compress(MemorySnapshot.of(_items(before)))
    grown = MemorySnapshot(settled.items + tuple(added), settled.summary)
    assert compressor.settled_after(added) == ("call" not in after)
    if compressor.settled_after(added):
        assert compressor.compress(grown) == grown


def test_a_chain_is_its_stages_in_order() -> None:
    items = _trajectory([0, 2, 1, 0, 3, 0, 1, 2, 0, 0])
    stages = [TaskSegmentedCompressor(keep_tasks=3), HybridMemoryCompressor(max_items=6)]
    chained = ChainCompressor(stages).compress(MemorySnapshot.of(items))
    assert chained == stages[1].compress(stages[0].compress(MemorySnapshot.of(items)))
    assert len(chained.items) <= 6 + 4  # the window, or one unit more when a tool exchange straddles it
    assert chained.summary is not None and "[Sub-task 1]" in chained.summary  # sub-task lines and the window's fold
    assert ChainCompressor([]).compress(MemorySnapshot.of(items)) == MemorySnapshot.of(items)


def test_the_chain_entry_builds_window_summary_and_subtasks(make_config) -> None:
    history = instantiate(make_config("agent_memory=chain").agent_memory)("d")
    compressor = history.memory.compressor
    assert isinstance(compressor, ChainCompressor)
    assert [type(s) for s in compressor.stages] == [TaskSegmentedCompressor, HybridMemoryCompressor]
    codeact = instantiate(make_config("experiment=codeact").agent_memory)("d").memory.compressor
    assert [type(s) for s in codeact.stages] == [ToolRoundsCompressor, WindowedMemoryCompressor]
