"""The contract every backend keeps: the same writes, compressions, cleanups, resumes and forks give
the same items and summary in memory, SQLite, PostgreSQL, MariaDB and Redis."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

from memlab.llm import ExtractiveChatModel
from memlab.memory import (
    Agent,
    AgentMemoryHistory,
    DeleteStrategy,
    FilterStrategy,
    HybridMemoryCompressor,
    MemoryCleanupService,
    MemorySnapshot,
    StoreAgentMemory,
    StoreChatMemory,
    SummarizeStrategy,
    TaskSegmentedCompressor,
    TrimStrategy,
    WindowedMemoryCompressor,
    summarized_count,
)
from memlab.messages import FunctionCall, FunctionCallOutput, Message, MessageItem, ToolCall, item_to_dict
from memlab.stores import InMemoryStore, SessionState
from memlab.trace import MEMORY_CLEANUP, MEMORY_COMPRESS, recording

if TYPE_CHECKING:
    from tests.stores.conftest import Backend

BIG_OUTPUT = "航班 SK4411 " * 12_000  # > 64 KiB: MySQL's TEXT would cut it


def _items(memory: Any) -> list[dict[str, Any]]:
    return [item_to_dict(i) for i in memory.get_items()]


def scenario(open_store: Any) -> dict[str, Any]:
    """One sequence of writes, compressions, cleanups, resumes and forks; everything observed on the way."""
    seen: dict[str, Any] = {}
    store = open_store()
    llm = ExtractiveChatModel(counter="estimate")

    # an agent loop with the counting hybrid compressor (no model): user input, parallel calls, outputs
    loop = StoreAgentMemory(store, "loop:1", HybridMemoryCompressor(max_items=5))
    writes = 0
    for turn in range(4):
        loop.add_user_input(f"turn {turn}: 请帮我改签 ✈️")
        loop.add_output_items([FunctionCall(f"c{turn}a", "search", '{"q": 1}'), FunctionCall(f"c{turn}b", "price")])
        loop.add_tool_output(f"c{turn}a", BIG_OUTPUT if turn == 1 else f"result {turn}")
        loop.add_tool_output(f"c{turn}b", "¥ 1200")
        loop.add_output_items([{"type": "message", "role": "assistant", "content": f"done {turn}"}])
        writes += 5 + 1
    seen["loop"] = (_items(loop), loop.get_summary(), len(loop))
    seen["loop.accounted"] = summarized_count(loop.get_summary()) + len(loop) == writes

    # the recommended strategy B with the (deterministic) extractive model, and strategy C
    hybrid = StoreAgentMemory(store, "loop:llm", HybridMemoryCompressor(max_items=4, llm=llm))
    tasks = StoreAgentMemory(store, "loop:tasks", TaskSegmentedCompressor(llm=llm))
    for i in range(9):
        for memory in (hybrid, tasks):
            memory.add_user_input(f"I prefer aisle seats, request {i}")
            memory.add_output_items([MessageItem("assistant", f"Noted request {i}; booking flight {100 + i}.")])
    seen["hybrid"] = (_items(hybrid), hybrid.get_summary())
    seen["tasks"] = (_items(tasks), tasks.get_summary())

    # compact on demand, then resume from a new store object (as another process would)
    agent = Agent.on_store(store, compactor=WindowedMemoryCompressor(3))
    session = agent.resume("loop:1")
    seen["compact"] = session.compact().to_dict()
    resumed = Agent.on_store(open_store()).resume("loop:1")
    seen["resumed"] = resumed.save().to_dict()

    # fork and diverge
    fork = agent.fork(session, "loop:1:fork")
    fork.memory.add_user_input("try the train instead")
    session.memory.add_tool_output("c9", "late output")
    seen["fork"] = fork.save().to_dict()
    seen["original"] = session.save().to_dict()

    # Memory-layer cleanups on a chat history, each in one transaction
    chat = StoreChatMemory(store, "chat:1")
    for i in range(1, 11):
        chat.append(
            Message(
                role="user" if i % 2 else "assistant",
                # long enough that a 20-token summary of three of them is shorter than they are
                content=f"{i} {'重要' if i % 3 == 0 else '好的'}：我们确认了第{i}天的行程和酒店。",
                id=f"D1:{i}",
            )
        )
    chat.append(Message(role="assistant", tool_calls=(ToolCall("t1", "lookup", "{}"),), id="D1:11"))
    chat.append(Message(role="tool", content="found", tool_call_id="t1", id="D1:12"))
    chat.append(Message(role="assistant", content="12 done", id="D1:13"))
    for name, strategy in [
        ("filter", FilterStrategy([{"roles": ["user"]}, {"roles": ["assistant"], "keywords": ["重要"]}])),
        ("trim", TrimStrategy(2, 3)),
        ("delete", DeleteStrategy(4)),
        ("summarize", SummarizeStrategy(llm, threshold=2, keep_last=1, max_tokens=20)),
    ]:
        MemoryCleanupService(strategy).clean(chat)
        seen[f"cleanup.{name}"] = [(m.role, m.content, m.id, m.tool_call_id) for m in chat.messages()]

    # a cleanup through the AgentMemory history adapter, and restore of a saved snapshot
    history = AgentMemoryHistory(StoreAgentMemory(store, "loop:1:fork"))
    MemoryCleanupService(TrimStrategy(1, 2)).clean(history)
    seen["history"] = [(m.role, m.content, m.tool_call_id) for m in history.messages()]
    restored = StoreAgentMemory(store, "restored")
    restored.restore(MemorySnapshot.from_dict(seen["original"]))
    seen["restored"] = restored.snapshot().to_dict()
    restored.clear()
    seen["sessions"] = store.sessions()
    return seen


def test_scenario_matches_the_in_memory_reference(backend: Backend) -> None:
    reference = InMemoryStore()
    expected = scenario(lambda: reference)
    got = scenario(backend.open)
    for key in expected:
        assert got[key] == expected[key], f"{backend.name} differs from memory at {key!r}"
    assert got["loop.accounted"]  # every item written is either kept or counted in the summary
    assert got["loop"][0][-1] == {"type": "message", "role": "assistant", "content": "done 3"}
    assert got["resumed"] == got["compact"] and len(got["compact"]["items"]) <= 3
    assert got["fork"]["items"][:-1] == got["original"]["items"][:-1] != got["fork"]["items"]
    assert [r[2] for r in got["cleanup.filter"]] == ["D1:1", "D1:3", "D1:5", "D1:6", "D1:7", "D1:9"]
    assert [r[2] for r in got["cleanup.trim"]] == ["D1:1", "D1:3", "D1:6", "D1:7", "D1:9"]
    assert [r[2] for r in got["cleanup.delete"]] == ["D1:3", "D1:6", "D1:7", "D1:9"]
    assert got["cleanup.summarize"][0][1].startswith("[持久化记忆摘要] ")  # the history is mostly Chinese
    assert [r[2] for r in got["cleanup.summarize"]] == [None, "D1:9"]
    assert got["restored"] == got["original"]
    assert "restored" not in got["sessions"] and "chat:1" in got["sessions"]


def test_events_are_the_same_on_every_backend(backend: Backend) -> None:
    def run(store: Any) -> list[tuple[str, dict[str, Any]]]:
        memory = StoreAgentMemory(store, "ev", HybridMemoryCompressor(max_items=2))
        with recording() as events:
            for i in range(4):
                memory.add_user_input(str(i))
            MemoryCleanupService(DeleteStrategy(1)).clean(AgentMemoryHistory(memory))
        return [(e.kind, {k: v for k, v in e.data.items() if k != "latency_us"}) for e in events]

    got = run(backend.open())
    assert got == run(InMemoryStore())
    assert [k for k, _ in got] == [MEMORY_COMPRESS, MEMORY_COMPRESS, MEMORY_CLEANUP]
    assert got[0][1]["before_items"] == 3 and got[0][1]["after_items"] == 2
    assert got[-1][1]["before_items"] == 3 and got[-1][1]["after_items"] == 1  # summary message + 2 items -> 1


def test_session_store_primitives(backend: Backend) -> None:
    store = backend.open()
    assert store.load("nope") == SessionState() and not store.exists("nope") and store.count("nope") == 0
    store.append("b", [{"n": 1}, {"n": 2}, {"n": 3}])
    assert store.update("b", lambda s: SessionState((*s.entries[1:], {"n": 4}), "")).entries == (
        {"n": 2},
        {"n": 3},
        {"n": 4},
    )
    assert store.load("b").summary == ""  # an empty summary is not "no summary"
    assert store.update("b", lambda s: None) == store.load("b")
    store.update("b", lambda s: SessionState(({"s": "x"}, *s.entries), None))  # not a suffix: full rewrite
    assert store.load("b") == SessionState(({"s": "x"}, {"n": 2}, {"n": 3}, {"n": 4}), None)
    store.update("b", lambda s: SessionState((), s.summary))
    assert store.load("b").entries == () and store.exists("b")
    store.update("fresh", lambda s: None)
    assert store.exists("fresh")  # an update creates the session on every backend
    for sid in ["é", "B", "a:1", "a"]:
        store.append(sid, [{"k": sid, "nested": {"z": [1, 2], "a": None}}])
    assert store.sessions() == sorted(["b", "fresh", "é", "B", "a:1", "a"])
    assert store.load("é").entries == ({"k": "é", "nested": {"a": None, "z": [1, 2]}},)
    store.delete_session("é")
    assert not store.exists("é") and store.load("é") == SessionState()
    with pytest.raises(ValueError, match="255"):
        store.append("x" * 256, [{"n": 1}])


def test_a_failing_update_writes_nothing(backend: Backend) -> None:
    store = backend.open()
    store.append("s", [{"n": i} for i in range(5)])
    before = store.load("s")

    def boom(state: SessionState) -> SessionState:
        raise RuntimeError("strategy failed")

    with pytest.raises(RuntimeError, match="strategy failed"):
        store.update("s", boom)
    assert backend.open().load("s") == before


def test_chat_messages_keep_their_provenance(backend: Backend) -> None:
    from datetime import datetime

    m = Message(
        role="assistant",
        content=None,
        tool_calls=(ToolCall("c", "f", '{"a":1}'),),
        id="T:3",
        speaker="agent",
        timestamp=datetime(2023, 5, 8, 13, 56),
    )
    chat = StoreChatMemory(backend.open(), "prov")
    chat.append(m)
    chat.append(Message(role="tool", content="ok", tool_call_id="c", name="f"))
    got = StoreChatMemory(backend.open(), "prov").messages()
    assert got[0] == m and got[0].timestamp == m.timestamp and got[1].name == "f" and len(chat) == 2


def test_items_round_trip(backend: Backend) -> None:
    memory = StoreAgentMemory(backend.open(), "items")
    memory.add_user_input({"type": "message", "role": "system", "content": "CODE_RESULT: 42"})
    memory.add_output_items([FunctionCall("x", "run", '{"code": "1+1"}')])
    memory.add_tool_output("x", "")
    assert memory.get_items() == [
        MessageItem("system", "CODE_RESULT: 42"),
        FunctionCall("x", "run", '{"code": "1+1"}'),
        FunctionCallOutput("x", ""),
    ]
    assert memory.get_summary() is None


_REFERENCE: dict[str, bytes] = {}


def test_a_replayed_run_gives_the_same_metrics_on_every_backend(
    backend: Backend, make_config: Any, tau_bench_path: Any, tmp_path: Any
) -> None:
    from memlab.experiment import run_experiment

    base = (
        "dataset=tau_bench",
        f"dataset.path={tau_bench_path}",
        "dataset.max_dialogues=3",
        "agent_memory=hybrid",
        "agent_memory.compressor.max_items=6",
        "report.plots=false",  # compared is metrics.json, not the report's figures
    )
    if not _REFERENCE:
        reference = run_experiment(make_config(*base, "store=memory"), tmp_path / "memory")
        _REFERENCE["metrics"] = (reference.run_dir / "metrics.json").read_bytes()
    got = run_experiment(make_config(*base, *backend.overrides), tmp_path / backend.name)
    assert (got.run_dir / "metrics.json").read_bytes() == _REFERENCE["metrics"]
    assert any(e.kind == MEMORY_COMPRESS for r in got.records for e in getattr(r, "events", ()))
