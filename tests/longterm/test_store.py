"""Long-term memories in the SQL stores (SQLite, PostgreSQL, MariaDB): insert, scoping, access, archive."""

from __future__ import annotations

import threading
from dataclasses import replace
from datetime import timedelta

import sqlalchemy as sa

from memlab.longterm import Memory, MemoryStore, MemoryType, namespace_of

from .support import T0

NS_A = namespace_of("chat", "42")
NS_B = namespace_of("chat", "43")


def memory(i: int, ns=NS_A, content: str | None = None) -> Memory:
    return Memory(
        id=f"m{i}",
        namespace=ns,
        content=content or f"memory number {i} — 用户喜欢咖啡",
        type=MemoryType.FACT,
        source="auto_extract",
        agent_id="chat",
        created_at=T0 + timedelta(microseconds=123456),
        last_accessed_at=T0,
        evidence=("D1:1", "D1:2"),
    )


def test_round_trip_keeps_every_field(store: MemoryStore) -> None:
    m = replace(memory(1), revises=("m0",))
    assert store.add([m]) == 1
    assert store.list(NS_A) == [m]  # microseconds, unicode, evidence and revision links survive every dialect


def test_adding_a_stored_id_keeps_the_stored_row(store: MemoryStore) -> None:
    store.add([memory(1), memory(2)])
    assert store.add([replace(memory(1), content="rewritten", access_count=5)]) == 0
    listed = store.list(NS_A)
    assert [m.id for m in listed] == ["m1", "m2"]  # insertion order kept, no second row
    assert listed[0] == memory(1)


def test_an_access_is_counted_and_rescored_in_the_store(store: MemoryStore) -> None:
    store.add([memory(1), memory(2)])
    later = T0 + timedelta(days=3)
    seen: list[Memory] = []
    touched = store.touch(NS_A, ["m2", "m1"], later, lambda m: seen.append(m) or 0.25)
    assert [m.id for m in touched] == ["m2", "m1"] and all(m.access_count == 1 for m in touched)
    assert {m.id for m in seen} == {"m1", "m2"} and all(m.access_count == 0 for m in seen)  # the stored rows
    assert all(m.relevance_score == 0.25 and m.last_accessed_at == later for m in store.list(NS_A))
    store.touch(NS_A, ["m1"], T0, lambda m: 0.5)  # an older clock never moves the last access back
    assert store.list(NS_A)[0].last_accessed_at == later and store.list(NS_A)[0].access_count == 2


def test_reads_and_writes_are_scoped_to_one_namespace(store: MemoryStore) -> None:
    store.add([memory(1, NS_A), memory(2, NS_B)])
    assert [m.id for m in store.list(NS_A)] == ["m1"]
    assert store.archive(NS_B, ["m1"]) == 0  # m1 is not B's to archive
    assert store.touch(NS_B, ["m1"], T0, lambda m: 0.0) == []
    assert store.count(NS_A) == 1
    # The same id in another namespace is another memory.
    store.add([replace(memory(1, NS_B), content="hijacked")])
    assert store.list(NS_A)[0].content == memory(1).content
    assert [m.id for m in store.list(NS_B, archived=None)] == ["m2", "m1"]


def test_archive_and_restore(store: MemoryStore) -> None:
    store.add([memory(1), memory(2)])
    assert store.archive(NS_A, ["m1"]) == 1 and store.archive(NS_A, ["m1"]) == 0
    assert [m.id for m in store.list(NS_A)] == ["m2"]
    assert [m.id for m in store.list(NS_A, archived=True)] == ["m1"]
    assert store.touch(NS_A, ["m1"], T0, lambda m: 1.0) == []  # an access never resurrects an archived memory
    assert store.count(NS_A, archived=None) == 2
    later = T0 + timedelta(days=9)
    assert store.restore(NS_A, ["m1", "m2"], later) == 1
    restored = store.list(NS_A)[0]
    assert restored.id == "m1" and restored.relevance_score == 1.0 and restored.last_accessed_at == later
    assert store.count(NS_A) == 2


def test_the_table_has_the_documents_shape(store: MemoryStore) -> None:
    store.count(NS_A)  # first use migrates
    inspector = sa.inspect(store.rows.engine)
    columns = {c["name"]: c for c in inspector.get_columns("ah_long_term_memory", schema=store.rows.schema)}
    assert {
        "id",
        "namespace",
        "value_json",
        "created_at",
        "last_accessed_at",
        "access_count",
        "relevance_score",
        "archived",
    } <= set(columns)
    assert columns["id"]["type"].length == 255  # VARCHAR(255): MySQL cannot key on TEXT
    pk = inspector.get_pk_constraint("ah_long_term_memory", schema=store.rows.schema)["constrained_columns"]
    assert set(pk) == {"namespace", "id"}


def test_concurrent_writers_and_readers(store: MemoryStore) -> None:
    errors: list[BaseException] = []

    def write(offset: int) -> None:
        try:
            for i in range(offset, offset + 25):
                store.add([memory(i)])
                store.list(NS_A)
        except BaseException as e:  # reported below, a thread cannot fail the test itself
            errors.append(e)

    threads = [threading.Thread(target=write, args=(k * 100,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert store.count(NS_A) == 100
