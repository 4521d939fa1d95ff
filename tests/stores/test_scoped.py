"""A run's scope in a shared store (`memlab.stores.scoped`), on every backend: two scopes never see each
other's sessions or long-term rows, callers see their own ids and namespaces, and a snapshot restored
gives back the scope's state exactly (entries, summaries, rows in order with their access counts)."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from memlab.stores import (
    InMemoryStore,
    MemoryRow,
    MemoryRows,
    RedisStore,
    ScopeState,
    SessionState,
    SqlStore,
    new_scope,
    scoped,
)
from memlab.stores.scoped import ScopedSessions, ScopedStore

if TYPE_CHECKING:
    from tests.stores.conftest import Backend

NS = ("agent:chat", "user:42", "memories")
OTHER_NS = ("agent:chat", "user:7", "memories")
T0 = datetime(2024, 1, 1, 12, 0, 0, 123456)


def row(key: str, ns: tuple[str, ...] = NS, content: str = "用户住在克拉科夫") -> MemoryRow:
    return MemoryRow(ns, key, {"content": content}, "FACT", "auto_extract", T0, T0)


def test_new_scopes_differ_and_fit_a_key() -> None:
    scopes = {new_scope() for _ in range(1000)}
    assert len(scopes) == 1000 and all(s.startswith("run:") and len(s) == 16 for s in scopes)


# What a store object says about its database rather than about rows: nothing to scope.
DATABASE_LEVEL = {"migrate", "schema_version", "dialect", "engine"}


def test_a_scoped_store_scopes_every_operation_a_store_has() -> None:
    """A store operation added later without its scoped counterpart would read or write outside every run's scope."""
    for cls in (InMemoryStore, SqlStore, RedisStore):
        operations = {name for name in vars(cls) if not name.startswith("_")} - DATABASE_LEVEL
        assert operations <= set(vars(ScopedStore)) | set(vars(ScopedSessions)), cls.__name__


def test_two_scopes_of_one_store_never_see_each_other(backend: Backend) -> None:
    store = backend.open()
    a, b = scoped(store, "run:a"), scoped(backend.open(), "run:b")
    a.append("conv-1", [{"role": "user", "content": "I moved to Krakow"}])
    b.append("conv-1", [{"role": "user", "content": "I live in Oslo"}])
    b.update("conv-2", lambda s: SessionState(s.entries, "summary of b"))
    assert a.load("conv-1").entries == ({"role": "user", "content": "I moved to Krakow"},)
    assert (a.sessions(), b.sessions()) == (["conv-1"], ["conv-1", "conv-2"])
    assert (a.exists("conv-2"), b.exists("conv-2"), a.count("conv-1"), b.count("conv-2")) == (False, True, 1, 0)
    a.delete_session("conv-1")
    assert not a.exists("conv-1") and b.count("conv-1") == 1
    assert store.sessions() == ["run:b/conv-1", "run:b/conv-2"]  # the store itself sees where each one lives
    if not isinstance(store, MemoryRows):
        return
    assert a.add_memories([row("m1"), row("m2")]) == b.add_memories([row("m1"), row("m3", OTHER_NS)]) == 2
    assert [(r.namespace, r.id) for r in a.list_memories(NS)] == [(NS, "m1"), (NS, "m2")]
    assert [r.id for r in b.list_memories(NS)] == ["m1"] and b.count_memories(OTHER_NS) == 1
    touched = a.touch_memories(NS, ["m1"], T0 + timedelta(days=1), lambda r: 0.5 if r.namespace == NS else -1.0)
    assert [(r.namespace, r.access_count, r.relevance_score) for r in touched] == [(NS, 1, 0.5)]
    assert b.list_memories(NS)[0].access_count == 0
    assert a.archive_memories(NS, ["m1", "m2"]) == 2 and b.count_memories(NS) == 1
    assert a.restore_memories(NS, ["m2"], T0) == 1 and [r.id for r in a.list_memories(NS)] == ["m2"]
    assert (a.memory_namespaces(), b.memory_namespaces()) == ([NS], [NS, OTHER_NS])
    assert store.memory_namespaces(("run:b",)) == [("run:b", *NS), ("run:b", *OTHER_NS)]


def test_a_restored_snapshot_is_the_state_it_saw(backend: Backend) -> None:
    """Whatever a killed attempt wrote after the snapshot (appends, new sessions, rows, accesses) is undone."""
    run, other = scoped(backend.open(), "run:r"), scoped(backend.open(), "run:o")
    run.append("conv-1", [{"n": 1}, {"n": 2}])
    run.update("conv-1", lambda s: SessionState(s.entries[1:], "folded n=1"))
    run.update("empty", lambda s: s)  # a session that exists with nothing in it
    other.append("conv-1", [{"n": 9}])
    rows = isinstance(run, MemoryRows)
    if rows:
        run.add_memories([row("m1"), row("m2"), row("m0", OTHER_NS)])
        run.touch_memories(NS, ["m2"], T0 + timedelta(days=2), lambda r: 0.25)
        run.archive_memories(NS, ["m1"])
        other.add_memories([row("m1")])
    seen = run.snapshot()
    assert dict(seen.sessions) == {"conv-1": SessionState(({"n": 2},), "folded n=1"), "empty": SessionState()}
    # what the killed attempt did
    run.append("conv-1", [{"n": 3}])
    run.append("conv-new", [{"n": 4}])
    run.delete_session("empty")
    if rows:
        run.add_memories([row("m3"), row("m4", ("agent:chat", "user:new", "memories"))])
        run.touch_memories(NS, ["m2", "m3"], T0 + timedelta(days=3), lambda r: 0.1)
        run.restore_memories(NS, ["m1"], T0)
    run.restore(seen)
    assert run.snapshot() == seen
    run.restore(seen)  # a restore cut short is finished by running it again
    assert run.snapshot() == seen
    if rows:
        listed = run.list_memories(NS, archived=None)
        assert [(r.id, r.access_count, r.relevance_score, r.archived) for r in listed] == [
            ("m1", 0, 1.0, True),
            ("m2", 1, 0.25, False),
        ]
        assert [r.id for r in other.list_memories(NS)] == ["m1"]
    assert other.load("conv-1").entries == ({"n": 9},)
    run.clear()
    assert run.snapshot() == ScopeState() and other.sessions() == ["conv-1"]


def test_namespaces_within_a_scope_are_matched_exactly(kv_backend: Backend) -> None:
    """Neither case (SQLite's LIKE ignores it), a longer scope nor LIKE's own characters widen the match."""
    store = kv_backend.open()
    for scope in ("run:a", "run:A", "run:ab", "run:%", "run:_"):
        scoped(store, scope).add_memories([row(f"{scope}-1"), row(f"{scope}-2", OTHER_NS)])
    store.add_memories([row("plain")])
    for scope in ("run:a", "run:A", "run:ab", "run:%", "run:_"):
        assert scoped(store, scope).memory_namespaces() == [NS, OTHER_NS], scope
    assert store.memory_namespaces(("run:%", "agent:chat")) == [("run:%", *NS), ("run:%", *OTHER_NS)]
    assert store.memory_namespaces(NS) == [NS]  # a namespace is within itself
    assert len(store.memory_namespaces()) == 11
    archived = scoped(store, "run:a")
    archived.archive_memories(NS, ["run:a-1"])
    assert archived.delete_memories(NS) == 1 and archived.memory_namespaces() == [OTHER_NS]
    assert scoped(store, "run:A").count_memories(NS) == 1 and store.count_memories(NS) == 1
