"""What every session store does: ordered JSON entries plus an optional summary per session.

Chat memories store messages and agent memories store items in the same shape, so one store
serves both. Every write is one transaction; `update` is the read-modify-write that memory
cleanups and compressions need: it runs a pure function on the current state under the
session's lock and writes the result atomically, or nothing if the function raises. Each
session has a change counter (`SessionStore.version`), so a reader that keeps a copy of the
history can tell, with one cheap read, whether any other writer changed it.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

Entry = Mapping[str, Any]


@dataclass(frozen=True)
class SessionState:
    """A session's stored entries (oldest first), its summary (None when it has none), and the session's
    `SessionStore.version` when it was read or written (not part of the value: ignored by ``==`` and on writes).

    Args:
        entries: The session's entries, oldest first.
        summary: Its summary (None: none).
        version: Bumped by every write (optimistic concurrency).
    """

    entries: tuple[Entry, ...] = ()
    summary: str | None = None
    version: int = field(default=0, compare=False)


Update = Callable[[SessionState], SessionState | None]


@runtime_checkable
class SessionStore(Protocol):
    """Sessions of ordered entries; safe for concurrent threads and processes on the same data."""

    def load(self, session_id: str) -> SessionState:
        """A consistent read of the session and its version (empty if it does not exist)."""
        ...

    def append(self, session_id: str, entries: Sequence[Entry]) -> int:
        """Add entries at the end, atomically; returns the session's version after the append."""
        ...

    def update(self, session_id: str, fn: Update) -> SessionState:
        """Replace the state by `fn(state)` in one transaction (None: leave it); returns the state after.

        The session exists afterwards. `fn` must be pure: a backend may run it again after a conflict.
        """
        ...

    def version(self, session_id: str) -> int:
        """The session's change counter: 0 before its first write; every append, every update that changes
        the session and every delete add exactly one, in the same transaction. It never goes back, not even
        when the session is deleted and written again, so an unchanged version means an unchanged session."""
        ...

    def exists(self, session_id: str) -> bool: ...

    def count(self, session_id: str) -> int:
        """How many entries the session holds."""
        ...

    def sessions(self) -> list[str]:
        """Every stored session id, sorted."""
        ...

    def delete_session(self, session_id: str) -> None:
        """Remove the session and its entries (no error if absent); its version goes on counting."""
        ...


def close_store(store: object) -> None:
    """Close `store`'s connections if it can (memlab's stores can; the protocol does not ask it of others).

    Also what a replay worker calls on its runtime factory when it exits (`memlab.sim.parallel`).

    Args:
        store: A store, or anything else (left alone when it has no ``close``).
    """
    close = getattr(store, "close", None)
    if close is not None:
        close()


def encode(entry: Entry) -> str:
    """The canonical JSON text of an entry (sorted keys), the same on every backend.

    Args:
        entry: One stored entry (a message or an item, as a mapping).
    """
    return json.dumps(entry, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def decode(text: str) -> dict[str, Any]:
    """The entry `encode` wrote; ValueError for text that is not a JSON object.

    Args:
        text: An entry's stored JSON text.
    """
    value = json.loads(text)
    if not isinstance(value, dict):
        raise ValueError(f"a stored entry is not a JSON object: {text[:80]!r}")
    return value


def plan_rewrite(old: Sequence[str], new: Sequence[str]) -> tuple[int, list[str]]:
    """How to turn `old` into `new` cheaply: drop the first `k` entries, then append the rest.

    The smallest `k` whose remaining entries are a prefix of `new`; a window that slides by one
    drops one and appends one, and anything else becomes drop-all plus append-all.

    Args:
        old: The stored entries' texts.
        new: The entries' texts wanted.

    >>> plan_rewrite(["a", "b", "c"], ["b", "c", "d"])
    (1, ['d'])
    >>> plan_rewrite(["a", "b"], ["s", "b"])
    (2, ['s', 'b'])
    """
    for k in range(len(old)):
        kept = len(old) - k
        if kept <= len(new) and old[k] == new[0] and list(new[:kept]) == list(old[k:]):
            return k, list(new[kept:])
    return len(old), list(new)


@dataclass(frozen=True)
class Rewrite:
    """What an `update` stores: drop the first `drop` stored bodies, append `add`, set `summary`."""

    drop: int
    add: list[str]
    summary: str | None
    state: SessionState  # the session afterwards, as `update` returns it


def plan_update(fn: Update, bodies: Sequence[str], summary: str | None) -> tuple[SessionState, Rewrite | None]:
    """`fn` run on the stored `bodies` and `summary`: the state it saw and the rewrite (None: nothing changes).

    >>> old, rewrite = plan_update(lambda s: SessionState(s.entries[1:], "s"), ['{"a":1}', '{"b":2}'], None)
    >>> old.entries, rewrite.drop, rewrite.add, rewrite.state
    (({'a': 1}, {'b': 2}), 1, [], SessionState(entries=({'b': 2},), summary='s', version=0))
    """
    old = SessionState(tuple(decode(b) for b in bodies), summary)
    new = fn(old)
    if new is None:
        return old, None
    new_bodies = [encode(e) for e in new.entries]
    if new_bodies == list(bodies) and new.summary == summary:
        return old, None
    drop, add = plan_rewrite(bodies, new_bodies)
    return old, Rewrite(drop, add, new.summary, SessionState(tuple(decode(b) for b in new_bodies), new.summary))
