"""Memory hot paths: an agent-memory write with compression (in memory and on SQLite), a chat history replayed
through `StoreChatMemory` (a read before every call, as the runtime does) and TRIM on a long history."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import pytest

from memlab.memory import HybridMemoryCompressor, StoreAgentMemory, StoreChatMemory, keep_latest, summarized_count, trim
from memlab.messages import Message, ToolCall
from memlab.stores import InMemoryStore, SqlStore

WRITES = 100


def _writes(store: Any, ids: itertools.count[int]) -> StoreAgentMemory:
    memory = StoreAgentMemory(store, f"bench-{next(ids)}", HybridMemoryCompressor(max_items=20))
    for i in range(WRITES):
        memory.add_user_input(f"turn {i}: the user prefers aisle seats on morning flights")
    return memory


def test_bench_hybrid_writes_in_memory(benchmark: Any) -> None:
    ids = itertools.count()
    memory = benchmark(_writes, InMemoryStore(), ids)
    assert len(memory) == 20 and summarized_count(memory.get_summary()) == WRITES - 20


def test_bench_hybrid_writes_sqlite(benchmark: Any, tmp_path: Path) -> None:
    ids = itertools.count()
    memory = benchmark(_writes, SqlStore(path=str(tmp_path / "bench.sqlite")), ids)
    assert len(memory) == 20 and summarized_count(memory.get_summary()) == WRITES - 20


CHAT_TURNS = 300  # about one LoCoMo conversation's turns


def _chat_replay(store: Any, ids: itertools.count[int]) -> int:
    """Each turn: read the history (what the runtime sends), then store the turn."""
    chat, sent = StoreChatMemory(store, f"chat-{next(ids)}"), 0
    for i in range(CHAT_TURNS):
        sent += len(chat.messages())
        chat.append(Message(role="user" if i % 2 else "assistant", content=f"turn {i}: we talked about flights"))
    return sent


@pytest.mark.parametrize("backend", ["memory", "sqlite"])
def test_bench_chat_replay(benchmark: Any, tmp_path: Path, backend: str) -> None:
    store = InMemoryStore() if backend == "memory" else SqlStore(path=str(tmp_path / "chat.sqlite"))
    sent = benchmark(_chat_replay, store, itertools.count())
    assert sent == CHAT_TURNS * (CHAT_TURNS - 1) // 2


def _history(n: int) -> list[Message]:
    out: list[Message] = []
    for i in range(n // 3):
        out.append(Message(role="user", content=f"question {i}"))
        out.append(Message(role="assistant", tool_calls=(ToolCall(f"c{i}", "lookup"),)))
        out.append(Message(role="tool", content=f"result {i}", tool_call_id=f"c{i}"))
    return out


def test_bench_trim_and_delete_600_messages(benchmark: Any) -> None:
    history = _history(600)
    out = benchmark(lambda: (trim(history, 2, 3), keep_latest(history, 49)))
    assert [m.role for m in out[0]] == ["user", "assistant", "tool", "user", "assistant", "tool"]
    assert len(out[1]) == 50  # the window starts inside a tool exchange: the whole exchange is kept
