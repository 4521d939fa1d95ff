"""What a reader that keeps a copy relies on, on every backend: a session's version counts each change
and never goes back, so `StoreChatMemory` sees any other writer's change (one in another process
included); and a long-term namespace's save lock keeps other processes out and counts its blocks."""

from __future__ import annotations

import multiprocessing
import threading
from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING, Any

import pytest

from memlab.memory import StoreChatMemory
from memlab.messages import Message
from memlab.stores import MemoryRow, SessionState

if TYPE_CHECKING:
    from tests.stores.conftest import Backend

FORK = multiprocessing.get_context("fork")
NS = ("agent:chat", "user:42", "memories")
T0 = datetime(2024, 1, 1, 12, 0)


def test_every_change_counts_once_and_the_count_never_goes_back(backend: Backend) -> None:
    store = backend.open()
    assert store.version("s") == 0 and store.load("s").version == 0
    assert store.append("s", [{"n": 1}]) == 1 == store.version("s")
    assert store.append("s", [{"n": 2}, {"n": 3}]) == 2
    unchanged = store.update("s", lambda state: state)
    assert unchanged.version == 2 == store.version("s")  # nothing written, nothing counted
    changed = store.update("s", lambda state: SessionState(state.entries[1:], "summary"))
    assert changed == SessionState(({"n": 2}, {"n": 3}), "summary") and changed.version == 3
    assert store.load("s").version == 3
    store.delete_session("s")
    assert store.load("s") == SessionState() and store.load("s").version == store.version("s") == 4
    assert store.append("s", [{"n": 9}]) == 5  # written again: it counts on from the deleted session
    store.delete_session("s")
    assert store.update("s", lambda state: SessionState(({"n": 10},))).version == 7
    assert backend.open().version("s") == 7  # another store object, as another process would open it
    assert store.version("other") == 0


def _keep_last_five_and_append_five(make: Callable[[], Any]) -> None:
    """The other writer: from its own store object, keep the last 5 of the 10 messages, then append 5."""
    other = StoreChatMemory(make(), "chat")
    other.update(lambda messages: messages[-5:])
    for i in range(5):
        other.append(Message(role="assistant", content=f"other {i}"))


def test_a_rewrite_by_another_writer_that_keeps_the_count_is_seen(backend: Backend) -> None:
    """The other writer leaves 10 messages, as before: a reader comparing counts served its stale copy."""
    store = backend.open()
    mine = StoreChatMemory(store, "chat")
    for i in range(10):
        mine.append(Message(role="user", content=f"mine {i}"))
    assert len(mine.messages()) == 10
    if backend.name == "memory":  # one process: the other writer is another object on the same store
        _keep_last_five_and_append_five(backend.make)
    else:
        child = FORK.Process(target=_keep_last_five_and_append_five, args=(backend.make,))
        child.start()
        child.join(60)
        assert child.exitcode == 0
    theirs = [f"mine {i}" for i in range(5, 10)] + [f"other {i}" for i in range(5)]
    assert [m.content for m in mine.messages()] == theirs
    assert mine.messages() == StoreChatMemory(backend.open(), "chat").messages()
    mine.replace([*mine.messages(), Message(role="user", content="mine again")])
    stored = StoreChatMemory(backend.open(), "chat").messages()
    assert [m.content for m in stored] == [*theirs, "mine again"]  # nothing resurrected, nothing of theirs lost


def _row(key: str) -> MemoryRow:
    return MemoryRow(NS, key, {"content": key}, "FACT", "agent_tool", T0, T0)


def test_a_namespace_version_counts_the_writes_that_change_the_active_rows(kv_backend: Backend) -> None:
    store = kv_backend.open()
    with store.exclusive(NS) as block:
        assert (block.before, block.after) == (0, 0)
        store.add_memories([_row("a"), _row("b")])
        assert block.after == 1  # one write
        store.add_memories([_row("a")])
        assert block.after == 1  # nothing new: nothing counted
    with store.exclusive(NS) as block:
        assert block.before == 1
        store.archive_memories(NS, ["a"])
        assert block.after == 2  # a row is no longer active
        store.archive_memories(NS, ["a", "gone"])
        assert block.after == 2  # nothing changed: nothing counted
        store.restore_memories(NS, ["a"], T0)
        assert block.after == 3
    store.add_memories([_row("c")])  # outside a block too
    assert kv_backend.open().memory_version(NS) == 4  # the version lives in the store, not the object
    with kv_backend.open().exclusive(NS) as block:
        assert block.before == 4
    assert store.delete_memories(NS) == 3
    with store.exclusive(NS) as block:
        assert block.before == 5 == store.memory_version(NS)  # read without the lock as well
    with store.exclusive(("agent:chat", "user:7", "memories")) as block:
        assert block.before == 0 == store.memory_version(("agent:chat", "user:7", "memories"))


def test_a_thread_cannot_take_a_save_lock_it_holds(kv_backend: Backend) -> None:
    """It would wait for itself (PostgreSQL's and MySQL's locks belong to a connection, not a thread)."""
    store = kv_backend.open()
    with store.exclusive(NS), pytest.raises(RuntimeError, match="not reentrant"), store.exclusive(NS):
        pass
    with store.exclusive(NS) as block:  # released as usual
        assert block.before == 0


def test_a_block_knows_when_another_write_came_in_between(kv_backend: Backend) -> None:
    if kv_backend.name == "sqlite":
        pytest.skip("SQLite's block holds the database's write lock: no other write can come in between")
    store, other = kv_backend.open(), kv_backend.open()
    with store.exclusive(NS) as block:
        writer = threading.Thread(target=other.add_memories, args=([_row("theirs")],))  # not under the lock
        writer.start()
        writer.join(30)
        store.add_memories([_row("mine")])
        assert block.after is None  # unknown: a copy made before the block lacks their row


def _hold_the_lock(make: Callable[[], Any], held: Any, release: Any) -> None:
    """Take the namespace's save lock, say so, and save a row only once told to: then leave the block."""
    store = make()
    with store.exclusive(NS):
        held.set()
        release.wait(30)
        store.add_memories([_row("saved while holding the lock")])


@pytest.mark.parametrize("workers", ["threads", "processes"])
def test_the_save_lock_keeps_every_other_writer_out(kv_backend: Backend, workers: str) -> None:
    if workers == "processes" and kv_backend.name == "memory":
        pytest.skip("the in-memory store lives in one process")
    maker: Any = threading if workers == "threads" else FORK
    held, release = maker.Event(), maker.Event()
    holder = (threading.Thread if workers == "threads" else FORK.Process)(
        target=_hold_the_lock, args=(kv_backend.make, held, release)
    )
    holder.start()
    assert held.wait(30)
    store = kv_backend.open()
    waiter_saw: list[tuple[int, list[str]]] = []

    def wait_for_the_lock() -> None:
        with store.exclusive(NS) as block:
            waiter_saw.append((block.before, [r.id for r in store.list_memories(NS)]))

    waiter = threading.Thread(target=wait_for_the_lock)
    waiter.start()
    waiter.join(0.5)  # time to get in, were the lock not held
    assert waiter.is_alive() and waiter_saw == []
    release.set()
    waiter.join(30)
    holder.join(30)
    assert waiter_saw == [(1, ["saved while holding the lock"])]  # it got in only after the holder's save


def test_a_sqlite_save_block_commits_whole_or_not_at_all(kv_backend: Backend) -> None:
    if kv_backend.name != "sqlite":
        pytest.skip("on SQLite the block is one transaction; elsewhere each write commits on its own")
    store = kv_backend.open()
    with pytest.raises(RuntimeError), store.exclusive(NS):
        store.add_memories([_row("a")])
        assert [r.id for r in store.list_memories(NS)] == ["a"]  # the block reads its own writes
        raise RuntimeError("the save failed half-way")
    assert store.list_memories(NS) == []
    with store.exclusive(NS) as block:
        assert block.before == 0  # the failed block's count went with it
