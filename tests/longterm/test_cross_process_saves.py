"""Agent saves from several processes into one namespace: the duplicate check sees what the others
saved (the store's save lock, `MemoryRows.exclusive`), so each content is stored once."""

from __future__ import annotations

import multiprocessing
import random
from typing import Any

from memlab.longterm import MEMORY_SAVE, MemoryStore, MemoryToolProvider, MemoryType, namespace_of
from memlab.longterm.model import SOURCE_AUTO_EXTRACT

from .support import context, reopen

FORK = multiprocessing.get_context("fork")
PROCESSES = 3
TOPICS = ["coffee", "tea", "berlin", "oslo", "piano", "marathon", "python", "java", "dogs", "cats"]
# 40 contents, none contained in another (the duplicate check matches by containment)
CONTENTS = [f"alice note {chr(97 + i // 10)}{i % 10} says she cares about {TOPICS[i % 10]}" for i in range(40)]


def _saver(store: MemoryStore, make_service: Any, start: Any, seed: int) -> None:
    tools = MemoryToolProvider(make_service(store=reopen(store)))
    contents = list(CONTENTS)
    random.Random(seed).shuffle(contents)  # each process in its own order: the same content meets at any time
    start.wait()
    for content in contents:
        assert "error" not in tools.call(context(user="alice"), MEMORY_SAVE, {"content": content, "type": "FACT"})


def test_processes_saving_the_same_contents_store_each_once(make_service, store: MemoryStore) -> None:
    assert not any(a != b and a in b for a in CONTENTS for b in CONTENTS)
    start = FORK.Barrier(PROCESSES)
    savers = [FORK.Process(target=_saver, args=(store, make_service, start, seed)) for seed in range(PROCESSES)]
    for saver in savers:
        saver.start()
    for saver in savers:
        saver.join(180)
    assert [s.exitcode for s in savers] == [0] * PROCESSES
    rows = store.list(namespace_of("chat", "alice"), archived=None)
    assert len(rows) == len(CONTENTS) and sorted(m.content for m in rows) == sorted(CONTENTS)


def _services_extracting_the_same_content_at_once(make_service: Any, store: MemoryStore) -> None:
    """Each service counts its own sequence numbers from 0: the same content saved at the same time by
    another must still get an id of its own, also beside an archived row, or its save would store nothing."""

    def extract() -> Any:
        service = make_service(store=store)
        return service.save(context(), "Ann likes green tea", MemoryType.FACT, source=SOURCE_AUTO_EXTRACT)

    first = extract()
    store.archive(first.memory.namespace, [first.memory.id])
    results = [extract(), extract()]
    ids = [first.memory.id, *(r.memory.id for r in results)]
    assert all(r.saved for r in results) and len(set(ids)) == 3
    rows = store.list(first.memory.namespace, archived=None)
    assert sorted(m.id for m in rows) == sorted(ids)
    assert [m.id for m in make_service(store=store).memories(context())] == ids[1:]


def test_services_saving_the_same_content_at_once_each_store_it(make_service: Any, store: MemoryStore) -> None:
    _services_extracting_the_same_content_at_once(make_service, store)


def test_services_saving_the_same_content_at_once_each_store_it_in_memory(make_service: Any) -> None:
    _services_extracting_the_same_content_at_once(make_service, MemoryStore())
