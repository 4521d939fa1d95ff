"""8 threads and 2 processes append to and compact the same sessions at once: no message is lost,
none is duplicated (counted after the run)."""

from __future__ import annotations

import multiprocessing
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

from memlab.memory import HybridMemoryCompressor, StoreAgentMemory, StoreChatMemory, summarized_count
from memlab.messages import Message, MessageItem

if TYPE_CHECKING:
    from tests.stores.conftest import Backend

THREADS = 8
PROCESSES = 2
WRITES = 12  # per writer and session
FORK = multiprocessing.get_context("fork")


def _writer(store: Any, name: str) -> None:
    """Append WRITES items to a compressed agent memory and WRITES messages to a plain chat, compacting as it goes."""
    agent = StoreAgentMemory(store, "shared:agent", HybridMemoryCompressor(max_items=6))
    chat = StoreChatMemory(store, "shared:chat")
    for i in range(WRITES):
        agent.add_user_input(f"{name}-{i}")  # compresses in the same transaction
        chat.append(Message(role="user", content=f"{name}-{i}"))
        if i % 4 == 3:
            agent.compact(HybridMemoryCompressor(max_items=2))


def _process(make: Callable[[], Any], name: str) -> None:
    store = make()
    _writer(store, name)
    store.close()


def test_concurrent_appends_and_compactions_lose_and_duplicate_nothing(shared_backend: Backend) -> None:
    store = shared_backend.open()
    names = [f"t{i}" for i in range(THREADS)] + [f"p{i}" for i in range(PROCESSES)]
    children = [FORK.Process(target=_process, args=(shared_backend.make, n)) for n in names[THREADS:]]
    for c in children:
        c.start()
    try:
        with ThreadPoolExecutor(THREADS) as pool:  # a thread's exception is raised by list()
            list(pool.map(lambda name: _writer(store, name), names[:THREADS]))
    finally:
        for c in children:
            c.join(120)
    assert [c.exitcode for c in children] == [0] * PROCESSES

    written = {f"{n}-{i}" for n in names for i in range(WRITES)}
    chat = [m.content for m in StoreChatMemory(shared_backend.open(), "shared:chat").messages()]
    assert len(chat) == len(written) and set(chat) == written  # every message exactly once

    agent = StoreAgentMemory(shared_backend.open(), "shared:agent")
    kept = [i.content for i in agent.get_items() if isinstance(i, MessageItem)]
    assert len(kept) == len(set(kept)) and set(kept) <= written  # no duplicate, nothing invented
    assert summarized_count(agent.get_summary()) + len(kept) == len(written)  # the rest is counted in the summary
    for n in names:  # each writer's surviving items are in the order it wrote them
        mine = [int(k.split("-")[1]) for k in kept if k.startswith(f"{n}-")]
        assert mine == sorted(mine)
