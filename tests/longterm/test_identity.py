"""Identity on every store: many users whose ids differ only in case, accents, trailing spaces or
script never see, touch or archive each other's memories; and two processes sharing one database
lose no access and never bring an archived memory back."""

from __future__ import annotations

import multiprocessing
import random
from typing import Any

from memlab.longterm import MemoryStore, namespace_of

from .support import context, reopen

FORK = multiprocessing.get_context("fork")
USERS = [
    "alice",
    "Alice",
    "ALICE",
    "jose",
    "josé",
    "José",
    "jose\u0301",
    "X",
    "X ",
    "X  ",
    " X",
    "1-bob",
    "1-bob ",
    "用户",
    "用戶",
    "😀",
    "😀 ",
    "ａlice",
]
WORDS = ["coffee", "tea", "berlin", "oslo", "piano", "marathon", "python", "java", "dog", "cat"]


def test_many_lookalike_users_never_cross(make_service, store: MemoryStore) -> None:
    rng = random.Random(11)
    service = make_service(store=store, agents={"chat": {"namespace": "chat", "max_items": 6}})
    owner: dict[str, str] = {}  # content -> the user who saved it
    crossings = results = 0
    for n in range(400):
        user = rng.choice(USERS)
        ctx = context(user=user)
        words = " ".join(rng.sample(WORDS, 2))
        if rng.random() < 0.5:
            content = f"note {n}: {words}"
            owner[content] = user
            service.save(ctx, content)
        else:
            hits = service.search(ctx, words, 20)
            results += len(hits)
            crossings += sum(owner[h.memory.content] != user for h in hits)
    assert results > 100 and crossings == 0
    # The cleanup by max_items archived only each user's own memories, and every row is its saver's.
    for user in USERS:
        ns = namespace_of("chat", user)
        rows = store.list(ns, archived=None)
        assert all(owner[m.content] == user for m in rows)
        assert store.count(ns) == min(6, sum(1 for who in owner.values() if who == user))


def _searcher(store: MemoryStore, make_service: Any, start: Any, searches: int) -> None:
    service = make_service(store=reopen(store))
    start.wait()
    for _ in range(searches):
        service.search(context(user="alice"), "coffee", 1)


def _archiver(store: MemoryStore, ids: list[str]) -> None:
    reopen(store).archive(namespace_of("chat", "alice"), ids)


def test_two_processes_keep_every_access_and_every_archive(make_service, store: MemoryStore) -> None:
    ctx = context(user="alice")
    service = make_service(store=store)
    coffee = service.save(ctx, "alice drinks coffee every morning").memory
    tea = service.save(ctx, "alice likes green tea").memory
    start = FORK.Barrier(2)
    workers = [FORK.Process(target=_searcher, args=(store, make_service, start, 40)) for _ in range(2)]
    for w in workers:
        w.start()
    for w in workers:
        w.join(120)
    assert [w.exitcode for w in workers] == [0, 0]
    stored = {m.id: m for m in store.list(namespace_of("chat", "alice"))}
    assert stored[coffee.id].access_count == 80

    assert [h.memory.id for h in service.search(ctx, "green tea", 1)] == [tea.id]  # cached here, active
    archiver = FORK.Process(target=_archiver, args=(store, [tea.id]))
    archiver.start()
    archiver.join(60)
    assert archiver.exitcode == 0
    service.search(ctx, "green tea", 1)  # this service's copy is stale: the access must not resurrect it
    assert [m.id for m in store.list(namespace_of("chat", "alice"), archived=True)] == [tea.id]
    assert tea.id not in {m.id for m in service.memories(ctx)}
