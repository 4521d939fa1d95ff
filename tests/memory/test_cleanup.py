"""MemoryCleanupService in a replay: at session ends, every N turns, every N seconds of virtual time;
its events; the config entries of `conf/memory/`."""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from hydra.utils import instantiate

from memlab.dialogues.model import Dialogue, Session
from memlab.errors import MemlabError
from memlab.experiment import run_experiment
from memlab.memory import (
    DeleteStrategy,
    FilterStrategy,
    InMemoryChatMemory,
    MemoryCleanupService,
    SummarizeStrategy,
    TrimStrategy,
)
from memlab.messages import Message, ToolCall
from memlab.runtime import Runtime, SecurityContext
from memlab.sim import CallRecord, LifecycleRecord, replay_dialogue
from memlab.tokens import get_counter
from memlab.trace import MEMORY_CLEANUP, recording

T0 = datetime(2024, 3, 1, 9, 0)


def dialogue(sessions: int = 2, per_session: int = 6, step: timedelta | None = None) -> Dialogue:
    out = []
    for s in range(sessions):
        ms = tuple(
            Message(
                role="user" if i % 2 == 0 else "assistant",
                content=f"s{s} m{i}" + (" 重要" if i == 3 else ""),
                id=f"S{s}:{i}",
                timestamp=None if step is None else T0 + step * (s * per_session + i),
            )
            for i in range(per_session)
        )
        out.append(Session(id=f"S{s}", messages=ms))
    return Dialogue(id="d1", sessions=tuple(out))


def replay(service: MemoryCleanupService, d: Dialogue) -> tuple[list[Any], InMemoryChatMemory]:
    history = InMemoryChatMemory()
    rt = Runtime(history=history, counter=get_counter("estimate"), security=SecurityContext("u"), components=[service])
    return list(replay_dialogue(d, rt)), history


def cleanups(records: list[Any]) -> list[tuple[str, str, int, int]]:
    return [
        (r.kind, e.data["trigger"], e.data["before_items"], e.data["after_items"])
        for r in records
        if isinstance(r, LifecycleRecord)
        for e in r.events
        if e.kind == MEMORY_CLEANUP
    ]


def test_cleanup_at_each_session_end_edits_the_stored_history() -> None:
    records, history = replay(MemoryCleanupService(DeleteStrategy(2)), dialogue())
    assert cleanups(records) == [("session.end", "session_end", 6, 2), ("session.end", "session_end", 8, 2)]
    assert [m.id for m in history.messages()] == ["S1:4", "S1:5"]
    calls = [r for r in records if isinstance(r, CallRecord)]
    assert [c.messages_in for c in calls if c.session_id == "S1"] == [3, 5, 7]  # session 2 starts from 2 kept


def test_cleanup_every_n_turns() -> None:
    records, history = replay(MemoryCleanupService(TrimStrategy(1, 1), on_session_end=False, every_turns=4), dialogue())
    assert cleanups(records) == [("message", "turns", 4, 2), ("message", "turns", 6, 2), ("message", "turns", 6, 2)]
    assert len(history) == 2


def test_a_tool_call_never_answered_does_not_stop_periodic_cleanup() -> None:
    """The defect: the call stayed pending for good, and no periodic cleanup ran for the rest of the dialogue."""
    history = InMemoryChatMemory()
    service = MemoryCleanupService(DeleteStrategy(5), on_session_end=False, every_turns=5)
    rt = Runtime(history=history, counter=get_counter("estimate"), security=SecurityContext("u"), components=[service])
    call = Message("assistant", None, tool_calls=(ToolCall("c1", "search"),))
    waiting = [Message("assistant", f"it is slow {k}") for k in range(3)]
    with recording() as events:
        for m in [Message("user", "hi"), call, *waiting]:
            rt.append(m)
        assert service.checkpoint()["turns"] == 5  # the turn limit is reached while the call waits...
        assert [e for e in events if e.kind == MEMORY_CLEANUP] == []  # ...so no cleanup yet
        for i in range(11):  # the first user message abandons the call: cleanups at the 1st, 6th and 11th
            rt.append(Message("user" if i % 2 == 0 else "assistant", f"m{i}"))
    assert [e.data["trigger"] for e in events if e.kind == MEMORY_CLEANUP] == ["turns", "turns", "turns"]
    assert len(history) == 5


def test_calls_of_two_assistant_messages_all_wait_for_their_results() -> None:
    """The second message's call did not replace the first's: its result alone let a cleanup cut c1 from its own."""
    service = MemoryCleanupService(DeleteStrategy(1), on_session_end=False, every_turns=4)
    rt = Runtime(
        history=InMemoryChatMemory(),
        counter=get_counter("estimate"),
        security=SecurityContext("u"),
        components=[service],
    )
    messages = [
        Message("user", "book it"),
        Message("assistant", None, tool_calls=(ToolCall("c1", "search"),)),
        Message("assistant", None, tool_calls=(ToolCall("c2", "price"),)),
        Message("tool", "450", tool_call_id="c2"),
        Message("tool", "TP201", tool_call_id="c1"),
    ]
    cleanups_so_far = []
    with recording() as events:
        for m in messages:
            rt.append(m)
            cleanups_so_far.append(sum(e.kind == MEMORY_CLEANUP for e in events))
    assert cleanups_so_far == [0, 0, 0, 0, 1]  # the turn limit came with c2's result, while c1 still waited


def test_cleanup_every_n_seconds_of_virtual_time() -> None:
    service = MemoryCleanupService(
        FilterStrategy([{"roles": ["user"]}, {"keywords": ["重要"]}]), on_session_end=False, every_seconds=240
    )
    records, history = replay(service, dialogue(step=timedelta(minutes=1)))
    assert [c[1] for c in cleanups(records)] == ["seconds", "seconds"]  # 12 messages a minute apart, every 4 minutes
    assert all(m.role == "user" or "重要" in m.text for m in history.messages()[:-3])


def test_summary_length_is_reported(scripted: Any) -> None:
    model = scripted("Prefers trains.")
    records, history = replay(MemoryCleanupService(SummarizeStrategy(model, threshold=4, keep_last=2)), dialogue())
    events = [e.data for r in records if isinstance(r, LifecycleRecord) for e in r.events if e.kind == MEMORY_CLEANUP]
    assert [(d["before_items"], d["after_items"], d["summary_length"]) for d in events] == [(6, 3, 15), (9, 3, 15)]
    assert history.messages()[0].text == "[Persistent memory summary] Prefers trains."


def test_a_history_that_cannot_be_rewritten_is_an_error() -> None:
    class AppendOnly:
        def append(self, message: Message) -> None: ...

        def messages(self) -> list[Message]:
            return []

        def __len__(self) -> int:
            return 0

    with pytest.raises(MemlabError, match="cannot be rewritten"):
        MemoryCleanupService(DeleteStrategy(1)).clean(AppendOnly())
    with pytest.raises(MemlabError, match="every_turns"):
        MemoryCleanupService(DeleteStrategy(1), every_turns=0)


def long_logs(path: Path) -> Path:
    """Two 40-message conversations in the OpenAI JSONL format users' logs come in."""
    lines = []
    for c in range(2):
        turns = [
            {
                "role": "user" if i % 2 == 0 else "assistant",
                "content": f"conversation {c} turn {i}: I live in Oslo" + (" 重要" if i % 5 == 0 else ""),
            }
            for i in range(40)
        ]
        lines.append(json.dumps({"messages": turns}, ensure_ascii=False))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.mark.parametrize("name", ["trim", "summarize", "delete", "filter"])
def test_config_entries_run_through_the_simulator(make_config: Any, tmp_path: Path, name: str) -> None:
    data = long_logs(tmp_path / "logs.jsonl")
    cfg = make_config(f"memory={name}", "dataset=jsonl", f"dataset.path={data}", "memory.every_turns=10")
    result = run_experiment(cfg, tmp_path / name)
    baseline = run_experiment(make_config("dataset=jsonl", f"dataset.path={data}"), tmp_path / "none")
    assert result.metrics["calls"] == baseline.metrics["calls"]
    assert result.metrics["tokens.prompt.total"] < baseline.metrics["tokens.prompt.total"]
    cleaned = [
        e for r in result.records if isinstance(r, LifecycleRecord) for e in r.events if e.kind == MEMORY_CLEANUP
    ]
    assert cleaned and all(e.data["strategy"] == name for e in cleaned)
    json.dumps([e.data for e in cleaned])  # flat and JSON-ready


def test_the_filter_entry_is_the_documents_example(make_config: Any) -> None:
    service = instantiate(make_config("memory=filter").memory)
    history = [
        Message(role="user", content="a"),
        Message(role="assistant", content="b"),
        Message(role="assistant", content="这很重要"),
        Message(role="system", content="s"),
    ]
    assert [m.text for m in service.strategy.apply(history)] == ["a", "这很重要"]
