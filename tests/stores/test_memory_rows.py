"""Long-term memory rows on every backend that keeps them: insertion order, limits, concurrent adds,
and identity: ids that differ only in case, accents, trailing spaces or script never share a row."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

import pytest

from memlab.stores import MemoryRow

if TYPE_CHECKING:
    from tests.stores.conftest import Backend

NS = ("agent:chat", "user:42", "memories")
T0 = datetime(2024, 1, 1, 12, 0, 0, 123456)


def row(key: str, ns: tuple[str, ...] = NS, content: str = "用户是后端Java开发者") -> MemoryRow:
    return MemoryRow(ns, key, {"content": content}, "FACT", "auto_extract", T0, T0)


def test_rows_keep_insertion_order_and_every_field(kv_backend: Backend) -> None:
    store = kv_backend.open()
    assert store.add_memories([row("b"), row("a"), row("c")]) == 3
    assert store.add_memories([row("a", content="again"), row("d")]) == 1
    listed = kv_backend.open().list_memories(NS)
    assert [r.id for r in listed] == ["b", "a", "c", "d"]
    assert listed[1] == row("a")  # microseconds, unicode, the stored value untouched
    assert store.count_memories(NS) == 4 and store.count_memories(("agent:chat", "user:42")) == 0


def test_times_are_naive_utc_and_limits_are_checked(kv_backend: Backend) -> None:
    store = kv_backend.open()
    aware = datetime(2024, 5, 1, 10, 30, tzinfo=UTC) + timedelta(hours=0)
    store.add_memories([MemoryRow(NS, "t", {}, "FACT", "s", aware, aware)])
    assert store.list_memories(NS)[0].created_at == datetime(2024, 5, 1, 10, 30)
    store.add_memories([row("k" * 255)])
    with pytest.raises(ValueError, match="255"):
        store.add_memories([row("k" * 256)])
    with pytest.raises(ValueError, match="at most 255"):
        store.add_memories([row("k", ns=("x" * 300,))])
    with pytest.raises(TypeError, match="list of strings"):
        store.list_memories("agent:chat")
    assert store.count_memories(NS) == 2


def test_concurrent_adds_and_touches(kv_backend: Backend) -> None:
    store = kv_backend.open()
    store.add_memories([row(f"key{i}") for i in range(5)])

    def writer(w: int) -> None:
        for i in range(10):
            store.add_memories([row(f"w{w}-{i}")])
            store.touch_memories(NS, [f"key{i % 5}"], T0, lambda r: r.relevance_score)

    with ThreadPoolExecutor(6) as pool:  # a thread's exception is raised by list()
        list(pool.map(writer, range(6)))
    listed = store.list_memories(NS)
    assert len(listed) == 5 + 60 and len({r.id for r in listed}) == 65
    assert sum(r.access_count for r in listed) == 60


# Ids that a case-, accent- or space-insensitive comparison would take for one another.
LOOKALIKES = [
    ("alice", "Alice"),
    ("jose", "josé"),
    ("jose", "jose\u0301"),  # the same accent, decomposed
    ("X", "X "),
    ("1-bob", "1-bob "),
    ("strasse", "straße"),
    ("用户", "用戶"),
    ("😀", "😃"),
    ("a", "ａ"),  # fullwidth
]


@pytest.mark.parametrize(("one", "other"), LOOKALIKES)
def test_lookalike_namespaces_and_ids_never_share_a_row(kv_backend: Backend, one: str, other: str) -> None:
    store = kv_backend.open()
    ns_one, ns_other = ("agent:chat", f"user:{one}", "memories"), ("agent:chat", f"user:{other}", "memories")
    assert store.add_memories([row("m", ns_one, "one's"), row(one, ns_one, "one's id")]) == 2
    assert store.add_memories([row("m", ns_other, "other's"), row(other, ns_one, "other's id")]) == 2
    assert [(r.id, r.value["content"]) for r in store.list_memories(ns_one)] == [
        ("m", "one's"),
        (one, "one's id"),
        (other, "other's id"),
    ]
    assert [r.value["content"] for r in store.list_memories(ns_other)] == ["other's"]
    assert store.archive_memories(ns_one, [other]) == 1
    assert [r.id for r in store.list_memories(ns_one)] == ["m", one]
    assert store.touch_memories(ns_other, ["m"], T0, lambda r: 0.5)[0].value["content"] == "other's"
    assert store.list_memories(ns_one)[0].access_count == 0


@pytest.mark.parametrize(("one", "other"), LOOKALIKES)
def test_lookalike_session_ids_are_different_sessions(backend: Backend, one: str, other: str) -> None:
    store = backend.open()
    store.append(one, [{"who": one}])
    store.append(other, [{"who": other}])
    store.update(other, lambda s: type(s)((*s.entries, {"who": "again"}), "other's summary"))
    assert backend.open().load(one).entries == ({"who": one},) and store.load(one).summary is None
    assert store.load(other).entries == ({"who": other}, {"who": "again"})
    assert sorted(store.sessions()) == sorted([one, other])
    store.delete_session(other)
    assert store.exists(one) and not store.exists(other)


def test_the_255_character_limit_is_the_same_everywhere(backend: Backend) -> None:
    store = backend.open()
    longest = "é" * 254 + "😀"  # 255 characters, 1,012 bytes in UTF-8
    store.append(longest, [{"n": 1}])
    assert backend.open().load(longest).entries == ({"n": 1},)
    with pytest.raises(ValueError, match="at most 255"):
        store.append(longest + "x", [{"n": 2}])
    assert store.sessions() == [longest]


def test_a_row_added_after_the_last_was_archived_still_lists_last(kv_backend: Backend) -> None:
    """A new row's place follows every stored row's, archived ones too (a tie in seq would order it by id)."""
    store = kv_backend.open()
    store.add_memories([row("y"), row("z")])
    assert store.archive_memories(NS, ["z"]) == 1
    store.add_memories([row("a")])
    assert [r.id for r in store.list_memories(NS, archived=None)] == ["y", "z", "a"]


def test_sqlite_reads_rows_by_id_through_the_primary_key(tmp_path) -> None:
    """Touches, archives and restores of a few ids read those rows, not every active row of the namespace:
    SQLite's plan for them names the primary key, not the (namespace, archived, seq) index."""
    import sqlalchemy as sa

    from memlab.stores import SqlStore
    from memlab.stores.sql import memories

    store = SqlStore(path=str(tmp_path / "plan.db"))
    try:
        store.add_memories([row(f"m{i}") for i in range(50)])
        ids = [f"m{i}" for i in range(10)]
        for archived in (False, True):
            query = sa.select(memories).where(store._in(NS, ids, archived=archived))
            sql = str(query.compile(store.engine, compile_kwargs={"literal_binds": True}))
            with store.engine.connect() as conn:
                plan = " ".join(str(r[-1]) for r in conn.exec_driver_sql(f"EXPLAIN QUERY PLAN {sql}"))
            assert "sqlite_autoindex_ah_long_term_memory_1" in plan and "active" not in plan, plan
    finally:
        store.close()
