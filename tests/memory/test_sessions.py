"""AgentMemory's interface and sessions: isolation (also under threads), save, resume, fork, compact."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from memlab.errors import MemlabError
from memlab.memory import (
    Agent,
    AgentMemory,
    HybridMemoryCompressor,
    InMemoryAgentMemory,
    MemorySnapshot,
    WindowedMemoryCompressor,
)
from memlab.messages import FunctionCall, FunctionCallOutput, MessageItem
from memlab.stores import InMemoryStore, SqlStore


def test_the_documents_interface() -> None:
    memory = InMemoryAgentMemory()
    assert isinstance(memory, AgentMemory)
    memory.add_user_input("hi")
    memory.add_user_input({"type": "message", "role": "system", "content": "CODE_ERROR: NameError"})
    memory.add_output_items([FunctionCall("c", "run"), {"type": "message", "role": "assistant", "content": "ok"}])
    memory.add_tool_output("c", "42")
    assert memory.get_items() == [
        MessageItem("user", "hi"),
        MessageItem("system", "CODE_ERROR: NameError"),
        FunctionCall("c", "run"),
        MessageItem("assistant", "ok"),
        FunctionCallOutput("c", "42"),
    ]
    assert memory.get_summary() is None and len(memory) == 5
    memory.clear()
    assert memory.get_items() == [] and len(memory) == 0
    with pytest.raises(ValueError, match="unknown item type"):
        memory.add_output_items([{"type": "reasoning"}])


def test_compressor_runs_after_every_write_and_compact_on_demand() -> None:
    memory = InMemoryAgentMemory(WindowedMemoryCompressor(3))
    for i in range(5):
        memory.add_user_input(str(i))
        assert len(memory) == min(i + 1, 3)
    assert memory.compact(HybridMemoryCompressor(1)) == MemorySnapshot.of(
        [MessageItem("user", "4")], "[压缩] 历史片段条数=2"
    )
    with pytest.raises(ValueError, match="compressor"):
        InMemoryAgentMemory().compact()


def test_snapshot_round_trips_through_json() -> None:
    snap = MemorySnapshot.of(
        [MessageItem("user", "x"), FunctionCall("c", "f", "{}"), FunctionCallOutput("c", "y")], "s"
    )
    assert MemorySnapshot.from_dict(snap.to_dict()) == snap


def test_sessions_are_isolated_and_resume_from_a_saved_snapshot() -> None:
    agent = Agent()
    a, b = agent.new_session(), agent.new_session()
    a.memory.add_user_input("only in a")
    assert a.id != b.id and b.item_count() == 0 and a.item_count() == 1
    saved = a.save().to_dict()
    with pytest.raises(MemlabError, match="nothing stored to resume"):
        agent.resume(a.id)  # in-memory sessions live in their objects only
    again = agent.resume(a.id, MemorySnapshot.from_dict(saved))
    assert again.memory.get_items() == [MessageItem("user", "only in a")] and again.memory is not a.memory


def test_stored_sessions_resume_fork_and_compact(tmp_path: Path) -> None:
    path = tmp_path / "sessions.sqlite"
    agent = Agent.on_store(SqlStore(path=str(path)), WindowedMemoryCompressor(10), compactor=HybridMemoryCompressor(2))
    monday = agent.new_session("monday")
    for i in range(6):
        monday.memory.add_user_input(f"step {i}")
    with pytest.raises(MemlabError, match="already has stored memory"):
        agent.new_session("monday")

    tuesday = Agent.on_store(SqlStore(path=str(path)))  # another process, the next day
    resumed = tuesday.resume("monday")
    assert [i.content for i in resumed.memory.get_items()] == [f"step {i}" for i in range(6)]  # type: ignore[union-attr]
    fork = tuesday.fork(resumed, "monday-alt")
    fork.memory.add_user_input("alternative")
    resumed.memory.add_user_input("continue")
    assert fork.item_count() == resumed.item_count() == 7
    assert fork.memory.get_items()[-1] != resumed.memory.get_items()[-1]

    compacted = monday.compact()  # the agent's compactor: keep 2, fold the rest into the summary
    assert len(compacted.items) == 2 and compacted.summary == "[压缩] 历史片段条数=5"
    assert tuesday.resume("monday").save() == compacted and tuesday.resume("monday-alt").item_count() == 7
    with pytest.raises(MemlabError, match="nothing stored"):
        tuesday.resume("never")


@pytest.mark.parametrize("kind", ["in-memory", "shared store", "sqlite"])
def test_concurrent_sessions_never_see_each_others_items(kind: str, tmp_path: Path) -> None:
    if kind == "in-memory":
        agent = Agent(lambda _id: InMemoryAgentMemory(HybridMemoryCompressor(5)))
    else:
        store = InMemoryStore() if kind == "shared store" else SqlStore(path=str(tmp_path / "s.sqlite"))
        agent = Agent.on_store(store, HybridMemoryCompressor(5))
    sessions = [agent.new_session(f"user-{u}") for u in range(8)]

    def talk(u: int) -> None:
        for i in range(20):
            sessions[u].memory.add_user_input(f"user-{u} says {i}")

    with ThreadPoolExecutor(len(sessions)) as pool:  # a thread's exception is raised by list()
        list(pool.map(talk, range(len(sessions))))
    for u, session in enumerate(sessions):
        items = session.memory.get_items()
        assert [i.content for i in items] == [f"user-{u} says {i}" for i in range(15, 20)]  # type: ignore[union-attr]
        assert session.memory.get_summary() == "\n".join(["[压缩] 历史片段条数=1"] * 15)
