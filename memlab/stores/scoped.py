"""A run's own part of a shared store: its session ids and long-term namespaces under a scope.

Two runs on one database (the same command twice, the jobs of a sweep, one after the other or at
once) must not read each other's histories or memories. `scoped(store, scope)` is `store` seen
from `scope`: a session id is stored as ``{scope}/{id}`` and a namespace as ``[scope, *namespace]``,
while callers see their own ids, namespaces and rows unchanged, so nothing a run computes (memory
ids, namespaces, token counts) depends on its scope. `ScopeState` is everything a scope holds:
a checkpoint carries it and a resume restores it, so a resumed run never sees a killed attempt's writes.

>>> from memlab.stores.memory import InMemoryStore
>>> shared = InMemoryStore()
>>> a, b = scoped(shared, "run:a"), scoped(shared, "run:b")
>>> a.append("conv-1", [{"role": "user", "content": "hi"}])  # the entries now stored
1
>>> a.sessions(), b.sessions(), shared.sessions()
(['conv-1'], [], ['run:a/conv-1'])
"""

from __future__ import annotations

import functools
import secrets
from collections.abc import Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any, cast

from memlab.stores.base import Entry, SessionState, SessionStore, Update, close_store
from memlab.stores.memories import MemoryRow, MemoryRows, Rescore, SaveBlock, check_key

SCOPE_PREFIX = "run:"


def new_scope() -> str:
    """A scope no other run has: ``run:`` and 48 random bits (from the OS, never the run's seeded RNG)."""
    return f"{SCOPE_PREFIX}{secrets.token_hex(6)}"


@dataclass(frozen=True)
class ScopeState:
    """Everything a scope holds: each session's state by id, and each long-term row (namespaces unscoped).

    Args:
        sessions: Each session's id and state.
        memories: Each long-term row.
    """

    sessions: tuple[tuple[str, SessionState], ...] = ()
    memories: tuple[MemoryRow, ...] = ()


class ScopedSessions:
    """The `SessionStore` `store` seen from `scope` (see the module docstring)."""

    def __init__(self, store: SessionStore, scope: str) -> None:
        self.store = store
        self.scope = scope
        self._prefix = f"{scope}/"

    def __repr__(self) -> str:
        return f"scoped({self.store!r}, {self.scope!r})"

    def _key(self, session_id: str) -> str:
        return self._prefix + check_key(session_id)

    def load(self, session_id: str) -> SessionState:
        return self.store.load(self._key(session_id))

    def append(self, session_id: str, entries: Sequence[Entry]) -> int:
        return int(self.store.append(self._key(session_id), entries))

    def version(self, session_id: str) -> int:
        return int(self.store.version(self._key(session_id)))

    def update(self, session_id: str, fn: Update) -> SessionState:
        return self.store.update(self._key(session_id), fn)

    def exists(self, session_id: str) -> bool:
        return self.store.exists(self._key(session_id))

    def count(self, session_id: str) -> int:
        return self.store.count(self._key(session_id))

    def sessions(self) -> list[str]:
        return [s[len(self._prefix) :] for s in self.store.sessions() if s.startswith(self._prefix)]

    def delete_session(self, session_id: str) -> None:
        self.store.delete_session(self._key(session_id))

    def close(self) -> None:
        close_store(self.store)

    def settle(self) -> None:
        """The wrapped store's `settle` (SQLite's files made whole once other processes are done), else its close."""
        settle = getattr(self.store, "settle", None)
        if settle is not None:
            settle()
        else:
            close_store(self.store)

    def snapshot(self) -> ScopeState:
        """What the scope holds now (read while nothing else writes to it: a replay at a session boundary)."""
        return ScopeState(tuple((s, self.load(s)) for s in self.sessions()))

    def restore(self, state: ScopeState) -> None:
        """Make the scope hold exactly `state`; a restore cut short is finished by running it again."""
        kept = dict(state.sessions)
        for session_id in self.sessions():
            if session_id not in kept:
                self.delete_session(session_id)
        for session_id, held in state.sessions:
            self.update(session_id, functools.partial(_replaced, held))

    def clear(self) -> None:
        """Remove everything the scope holds (a finished run's rows, once nobody needs to inspect them)."""
        self.restore(ScopeState())


class ScopedStore(ScopedSessions):
    """A store with long-term rows (`MemoryRows`) seen from `scope`: sessions and namespaces both scoped."""

    store: Any

    def _ns(self, namespace: Sequence[str]) -> tuple[str, ...]:
        if isinstance(namespace, str):  # as the stores refuse it, rather than scoping its characters
            raise TypeError(f"a namespace is a list of strings such as ['agent:chat', 'user:42'], not {namespace!r}")
        return (self.scope, *namespace)

    def _seen(self, row: MemoryRow) -> MemoryRow:
        return replace(row, namespace=row.namespace[1:])

    def add_memories(self, rows: Sequence[MemoryRow]) -> int:
        return int(self.store.add_memories([replace(r, namespace=self._ns(r.namespace)) for r in rows]))

    def list_memories(self, namespace: Sequence[str], *, archived: bool | None = False) -> list[MemoryRow]:
        return [self._seen(r) for r in self.store.list_memories(self._ns(namespace), archived=archived)]

    def count_memories(self, namespace: Sequence[str], *, archived: bool | None = False) -> int:
        return int(self.store.count_memories(self._ns(namespace), archived=archived))

    def touch_memories(
        self, namespace: Sequence[str], ids: Sequence[str], now: datetime, rescore: Rescore
    ) -> list[MemoryRow]:
        rows = self.store.touch_memories(self._ns(namespace), ids, now, lambda row: rescore(self._seen(row)))
        return [self._seen(r) for r in rows]

    def archive_memories(self, namespace: Sequence[str], ids: Sequence[str]) -> int:
        return int(self.store.archive_memories(self._ns(namespace), ids))

    def restore_memories(self, namespace: Sequence[str], ids: Sequence[str], now: datetime) -> int:
        return int(self.store.restore_memories(self._ns(namespace), ids, now))

    def memory_version(self, namespace: Sequence[str]) -> int:
        return int(self.store.memory_version(self._ns(namespace)))

    def exclusive(self, namespace: Sequence[str]) -> AbstractContextManager[SaveBlock]:
        return cast(AbstractContextManager[SaveBlock], self.store.exclusive(self._ns(namespace)))

    def memory_namespaces(self, within: Sequence[str] = ()) -> list[tuple[str, ...]]:
        return [ns[1:] for ns in self.store.memory_namespaces(self._ns(within))]

    def delete_memories(self, namespace: Sequence[str]) -> int:
        return int(self.store.delete_memories(self._ns(namespace)))

    def snapshot(self) -> ScopeState:
        rows = tuple(r for ns in self.memory_namespaces() for r in self.list_memories(ns, archived=None))
        return replace(super().snapshot(), memories=rows)

    def restore(self, state: ScopeState) -> None:
        super().restore(state)
        for namespace in self.memory_namespaces():
            self.delete_memories(namespace)
        self.add_memories(state.memories)  # in listing order: each namespace's rows keep their order


def _replaced(state: SessionState, _old: SessionState) -> SessionState:
    return state


def scoped(store: SessionStore, scope: str | None) -> Any:
    """`store` seen from `scope` (`store` itself when `scope` is None); a `ScopedStore` if it keeps long-term rows.

    Args:
        store: The store to look into.
        scope: The run scope (None: the store itself).
    """
    if scope is None:
        return store
    return ScopedStore(store, scope) if isinstance(store, MemoryRows) else ScopedSessions(store, scope)
