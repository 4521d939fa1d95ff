"""A cleanup killed mid-write leaves the old history whole: an exception injected after its first
DELETE, a child process killed with SIGKILL inside the transaction, a strategy that fails."""

from __future__ import annotations

import multiprocessing
import os
import signal
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from sqlalchemy import event

from memlab.memory import DeleteStrategy, FilterStrategy, MemoryCleanupService, StoreChatMemory, TrimStrategy
from memlab.messages import Message, ToolCall

if TYPE_CHECKING:
    from tests.stores.conftest import Backend

FORK = multiprocessing.get_context("fork")


def _fill(store: Any) -> list[Message]:
    chat = StoreChatMemory(store, "victim")
    for i in range(1, 9):
        chat.append(Message(role="user" if i % 2 else "assistant", content=f"msg{i}", id=f"m{i}"))
    chat.append(Message(role="assistant", tool_calls=(ToolCall("t", "f"),), id="m9"))
    chat.append(Message(role="tool", content="out", tool_call_id="t", id="m10"))
    return chat.messages()


def _after_first_delete(store: Any, action: Callable[[], None]) -> tuple[dict[str, int], Callable[[], None]]:
    """Call `action` right after the store's first DELETE of session entries has executed."""
    seen = {"deletes": 0}

    def hook(conn: Any, cursor: Any, statement: str, params: Any, context: Any, executemany: bool) -> None:
        if statement.lstrip().upper().startswith("DELETE") and "memlab_session_entries" in statement:
            seen["deletes"] += 1
            if seen["deletes"] == 1:
                action()

    engine = store.engine
    event.listen(engine, "after_cursor_execute", hook)
    return seen, lambda: event.remove(engine, "after_cursor_execute", hook)


def test_exception_after_the_first_delete_rolls_back(sql_backend: Backend) -> None:
    store = sql_backend.open()
    before = _fill(store)

    def fail() -> None:
        raise RuntimeError("injected after the first delete")

    seen, remove = _after_first_delete(store, fail)
    service = MemoryCleanupService(DeleteStrategy(3))
    with pytest.raises(RuntimeError, match="injected"):
        service.clean(StoreChatMemory(store, "victim"))
    assert seen["deletes"] == 1  # the injection point was reached: rows were deleted inside the transaction
    assert StoreChatMemory(sql_backend.open(), "victim").messages() == before
    remove()
    service.clean(StoreChatMemory(store, "victim"))  # the same cleanup, uninjected, does go through
    assert [m.id for m in StoreChatMemory(store, "victim").messages()] == ["m8", "m9", "m10"]


def _kill_self(marker: Path) -> None:
    marker.write_text("reached")
    os.kill(os.getpid(), signal.SIGKILL)


def _child_cleanup_killed_after_delete(make: Callable[[], Any], marker: Path) -> None:
    store = make()
    _after_first_delete(store, lambda: _kill_self(marker))
    MemoryCleanupService(TrimStrategy(1, 1)).clean(StoreChatMemory(store, "victim"))


def _child_cleanup_killed_in_strategy(make: Callable[[], Any], marker: Path) -> None:
    store = make()

    def keep(m: Message) -> bool:
        _kill_self(marker)
        return True

    MemoryCleanupService(FilterStrategy(predicate=keep)).clean(StoreChatMemory(store, "victim"))


def _run_child(target: Callable[..., None], *args: Any) -> int:
    child = FORK.Process(target=target, args=args)
    child.start()
    child.join(60)
    assert not child.is_alive(), "the child hung"
    return int(child.exitcode or 0)


def test_sigkill_during_the_transaction_leaves_the_old_history(sql_backend: Backend, tmp_path: Path) -> None:
    store = sql_backend.open()
    before = _fill(store)
    marker = tmp_path / "marker"
    assert _run_child(_child_cleanup_killed_after_delete, sql_backend.make, marker) == -signal.SIGKILL
    assert marker.read_text() == "reached"  # it died after its DELETE had run, before the commit
    assert StoreChatMemory(sql_backend.open(), "victim").messages() == before
    MemoryCleanupService(TrimStrategy(1, 1)).clean(StoreChatMemory(store, "victim"))  # no lock left behind
    assert [m.id for m in StoreChatMemory(store, "victim").messages()] == ["m1", "m9", "m10"]


def test_sigkill_inside_the_strategy_leaves_the_old_history(shared_backend: Backend, tmp_path: Path) -> None:
    store = shared_backend.open()
    before = _fill(store)
    marker = tmp_path / "marker"
    assert _run_child(_child_cleanup_killed_in_strategy, shared_backend.make, marker) == -signal.SIGKILL
    assert marker.exists()
    assert StoreChatMemory(shared_backend.open(), "victim").messages() == before
    MemoryCleanupService(TrimStrategy(1, 1)).clean(StoreChatMemory(store, "victim"))  # no lock left behind
    assert len(StoreChatMemory(store, "victim")) == 3


def test_a_failing_strategy_leaves_the_old_history(backend: Backend) -> None:
    store = backend.open()
    before = _fill(store)
    calls = {"n": 0}

    def flaky(m: Message) -> bool:
        calls["n"] += 1
        if calls["n"] == 4:
            raise ValueError("predicate failed on the fourth message")
        return m.role == "user"

    with pytest.raises(ValueError, match="fourth"):
        MemoryCleanupService(FilterStrategy(predicate=flaky)).clean(StoreChatMemory(store, "victim"))
    assert StoreChatMemory(backend.open(), "victim").messages() == before
