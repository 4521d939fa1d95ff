"""The SQL store of long-term memories on SQLite, PostgreSQL and MariaDB: upsert, scoping, archive."""

from __future__ import annotations

import threading
from dataclasses import replace
from datetime import timedelta

import sqlalchemy as sa

from memlab.longterm import Memory, MemoryType, SqlMemoryStore, namespace_of

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


def test_round_trip_keeps_every_field(store: SqlMemoryStore) -> None:
    m = memory(1)
    store.put([m])
    assert store.list(NS_A) == [m]  # microseconds, unicode and evidence survive every dialect


def test_upsert_updates_in_place(store: SqlMemoryStore) -> None:
    store.put([memory(1), memory(2)])
    touched = replace(memory(1), access_count=5, relevance_score=0.25, last_accessed_at=T0 + timedelta(days=3))
    store.put([touched])
    listed = store.list(NS_A)
    assert [m.id for m in listed] == ["m1", "m2"]  # insertion order kept, no second row
    assert listed[0] == touched


def test_reads_and_writes_are_scoped_to_one_namespace(store: SqlMemoryStore) -> None:
    store.put([memory(1, NS_A), memory(2, NS_B)])
    assert [m.id for m in store.list(NS_A)] == ["m1"]
    assert store.set_archived(NS_B, ["m1"], True) == 0  # m1 is not B's to archive
    assert store.count(NS_A) == 1
    # An upsert that reuses another namespace's id does not take the row over.
    store.put([replace(memory(1, NS_B), content="hijacked")])
    assert store.list(NS_A)[0].content == memory(1).content
    assert store.list(NS_B, archived=None)[0].id == "m2"


def test_archive_and_restore(store: SqlMemoryStore) -> None:
    store.put([memory(1), memory(2)])
    assert store.set_archived(NS_A, ["m1"], True) == 1
    assert [m.id for m in store.list(NS_A)] == ["m2"]
    assert [m.id for m in store.list(NS_A, archived=True)] == ["m1"]
    assert store.count(NS_A, archived=None) == 2
    assert store.set_archived(NS_A, ["m1"], False) == 1
    assert store.count(NS_A) == 2


def test_the_table_has_the_documents_shape(store: SqlMemoryStore) -> None:
    columns = {c["name"]: c for c in sa.inspect(store.engine).get_columns("ah_long_term_memory")}
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
    assert sa.inspect(store.engine).get_pk_constraint("ah_long_term_memory")["constrained_columns"] == ["id"]


def test_concurrent_writers_and_readers(store: SqlMemoryStore) -> None:
    errors: list[BaseException] = []

    def write(offset: int) -> None:
        try:
            for i in range(offset, offset + 25):
                store.put([memory(i)])
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
