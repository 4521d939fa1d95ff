"""AgentMemory items keep the ids of the messages they came from, through every compressor and store,
so a compressor's SUMMARY event names what it folded, as the context and memory summarizers' do."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from memlab.experiment import run_experiment
from memlab.llm import Completion
from memlab.memory import (
    ChainCompressor,
    HybridMemoryCompressor,
    MemoryCompressor,
    MemorySnapshot,
    TaskSegmentedCompressor,
    ToolRoundsCompressor,
    WindowedMemoryCompressor,
    agent_history,
)
from memlab.messages import (
    Message,
    ToolCall,
    item_from_dict,
    item_to_dict,
    items_to_messages,
    messages_to_items,
)
from memlab.stores.memory import InMemoryStore
from memlab.trace import SUMMARY, SummaryEvent, recording

# Two sub-tasks of a replayed trajectory: user request, model turn with two calls, their results, answer.
TRAJECTORY = [
    Message(role="user", content="Cancel reservation ABC123", id="t0"),
    Message(
        role="assistant",
        content="Looking it up.",
        tool_calls=(ToolCall("c1", "get_reservation"), ToolCall("c2", "get_user")),
        id="t1",
    ),
    Message(role="tool", content="ABC123: Oslo to Rome", tool_call_id="c1", id="t2"),
    Message(role="tool", content="user: Ada", tool_call_id="c2", id="t3"),
    Message(role="assistant", content="Cancelled ABC123", id="t4"),
    Message(role="user", content="Now book Oslo to Rome", id="t5"),
    Message(role="assistant", tool_calls=(ToolCall("c3", "search_flights"),), id="t6"),
    Message(role="tool", content="SK4411", tool_call_id="c3", id="t7"),
    Message(role="user", content="And add a bag", id="t8"),
]


def test_items_carry_their_messages_ids_both_ways_and_through_json() -> None:
    items = messages_to_items(TRAJECTORY)
    assert [i.source_id for i in items] == ["t0", "t1", "t1", "t1", "t2", "t3", "t4", "t5", "t6", "t7", "t8"]
    assert [item_from_dict(item_to_dict(i)) for i in items] == items
    back = items_to_messages(items)
    assert [(m.id, len(m.tool_calls)) for m in back if m.tool_calls] == [("t1", 2), ("t6", 1)]
    assert {m.id for m in back} == {m.id for m in TRAJECTORY}
    assert "source_id" not in item_to_dict(messages_to_items([Message(role="user", content="hi")])[0])


class Brief:
    """A chat model whose summary is always two words (so every summary is accepted)."""

    name = "brief"

    def complete(self, messages: Any, *, task: str = "chat", max_tokens: int | None = None, **params: Any) -> Any:
        return Completion("a summary", 10, 2, self.name)


def ids(*numbers: int) -> list[str]:
    return [f"t{n}" for n in numbers]


COMPRESSORS: dict[str, tuple[MemoryCompressor, set[str], list[str]]] = {
    # name -> (compressor, the source ids its summaries fold from TRAJECTORY, the source ids of the items it keeps)
    "hybrid": (HybridMemoryCompressor(max_items=3, llm=Brief()), set(ids(*range(6))), ids(6, 7, 8)),
    "per_task": (TaskSegmentedCompressor(llm=Brief()), set(ids(*range(8))), ids(8)),
    "tool_rounds": (ToolRoundsCompressor(keep_rounds=1, llm=Brief()), set(ids(1, 2, 3)), ids(0, 1, 4, 5, 6, 7, 8)),
    "chain": (
        ChainCompressor([TaskSegmentedCompressor(keep_tasks=2, llm=Brief()), HybridMemoryCompressor(2, Brief())]),
        set(ids(*range(8))),
        ids(8),
    ),
    "windowed": (WindowedMemoryCompressor(3), set(), ids(6, 7, 8)),
}


@pytest.mark.parametrize("name", sorted(COMPRESSORS))
def test_summary_events_name_the_folded_messages_and_kept_items_keep_theirs(name: str) -> None:
    compressor, folded, kept = COMPRESSORS[name]
    with recording() as events:
        out = compressor.compress(MemorySnapshot.of(messages_to_items(TRAJECTORY)))
    made = [SummaryEvent.of(e) for e in events if e.kind == SUMMARY]
    assert all(s.accepted for s in made)
    assert {i for s in made for i in s.source_ids} == folded
    assert [i.source_id for i in out.items] == kept


def test_a_compressed_history_sends_and_summarizes_by_source_id() -> None:
    history = agent_history("d", store=InMemoryStore(), compressor=HybridMemoryCompressor(max_items=3, llm=Brief()))
    with recording() as events:
        for m in TRAJECTORY:
            history.append(m)
    assert [m.id for m in history.messages()] == [None, "t6", "t7", "t8"]  # the summary, then the kept items
    assert {i for e in events if e.kind == SUMMARY for i in SummaryEvent.of(e).source_ids} == set(ids(*range(6)))


def test_a_compressed_run_reports_the_evidence_it_fed_to_summaries(
    make_config: Any, locomo_path: Path, tmp_path: Path
) -> None:
    """agent_memory=hybrid alone: every summary is the compressor's, and the probes' evidence went into them."""
    cfg = make_config(
        *("dataset=locomo", f"dataset.path={locomo_path}", "dataset.sample_ids=[conv-26]", "dataset.categories=[1]"),
        *("sim.call_roles=[]", "context=none", "agent_memory=hybrid", "agent_memory.compressor.max_items=10"),
    )
    m = run_experiment(cfg, tmp_path / "run").metrics
    assert m["summary.compressor.accepted"] > 0 and m["summary.context.count"] == 0
    assert m["context.evidence_fed_to_summary"] > 0.5
