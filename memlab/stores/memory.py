"""The in-memory store: the default, and the reference every persisted backend must match.

Entries are kept as their canonical JSON text, so what comes back is exactly what a database
would return. One lock serializes writers; it lives in one process only, as do the namespace
save locks of `exclusive`.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import threading
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import replace
from datetime import datetime
from typing import Any

from memlab.messages import naive
from memlab.stores.base import Entry, SessionState, Update, decode, encode, plan_update
from memlab.stores.memories import HeldBlocks, MemoryRow, Rescore, SaveBlock, check_key, encode_value, ns_text


class InMemoryStore:
    """Sessions and long-term memory rows in Python dicts (`store=memory`)."""

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._entries: dict[str, list[str]] = {}
        self._summaries: dict[str, str | None] = {}
        self._versions: Counter[str] = Counter()  # kept after a session is deleted: versions never go back
        self._memories: dict[tuple[str, str], tuple[int, MemoryRow]] = {}  # (namespace, id) -> (seq, row)
        self._seq = itertools.count(1)
        self._save_locks: dict[str, threading.Lock] = {}
        self._ns_versions: Counter[str] = Counter()  # per namespace: the writes that made rows active
        self._held = HeldBlocks()

    # --- sessions ---------------------------------------------------------------------

    def load(self, session_id: str) -> SessionState:
        with self._lock:
            bodies = list(self._entries.get(session_id, ()))
            summary, version = self._summaries.get(session_id), self._versions[session_id]
        return SessionState(tuple(decode(b) for b in bodies), summary, version)

    def append(self, session_id: str, entries: Sequence[Entry]) -> int:
        check_key(session_id)
        bodies = [encode(e) for e in entries]
        with self._lock:
            self._entries.setdefault(session_id, []).extend(bodies)
            self._summaries.setdefault(session_id, None)
            self._versions[session_id] += 1
            return self._versions[session_id]

    def update(self, session_id: str, fn: Update) -> SessionState:
        check_key(session_id)
        with self._lock:
            bodies = self._entries.get(session_id, [])
            old, rewrite = plan_update(fn, bodies, self._summaries.get(session_id))  # "unchanged": same JSON
            self._entries.setdefault(session_id, [])  # an update creates the session, as on every backend
            self._summaries.setdefault(session_id, None)
            if rewrite is None:
                return replace(old, version=self._versions[session_id])
            self._entries[session_id] = bodies[rewrite.drop :] + rewrite.add
            self._summaries[session_id] = rewrite.summary
            self._versions[session_id] += 1
            return replace(rewrite.state, version=self._versions[session_id])

    def exists(self, session_id: str) -> bool:
        with self._lock:
            return session_id in self._entries

    def count(self, session_id: str) -> int:
        with self._lock:
            return len(self._entries.get(session_id, ()))

    def version(self, session_id: str) -> int:
        return self._versions[session_id]

    def sessions(self) -> list[str]:
        with self._lock:
            return sorted(self._entries)

    def delete_session(self, session_id: str) -> None:
        with self._lock:
            self._entries.pop(session_id, None)
            self._summaries.pop(session_id, None)
            self._versions[session_id] += 1

    def close(self) -> None:
        """Nothing to release (the data lives as long as the object)."""

    # --- long-term memory rows -------------------------------------------------------

    def add_memories(self, rows: Sequence[MemoryRow]) -> int:
        added: Counter[str] = Counter()
        with self._lock:
            for row in rows:
                ident = (ns_text(row.namespace), check_key(row.id))
                if ident not in self._memories:
                    self._memories[ident] = (next(self._seq), _stored(row))
                    added[ident[0]] += 1
            for ns in added:
                self._count_write(ns)
        return added.total()

    def _count_write(self, ns: str) -> None:
        """Raise the namespace's version (under `_lock`), and tell this thread's save block."""
        self._ns_versions[ns] += 1
        self._held.wrote(ns, self._ns_versions[ns] - 1, self._ns_versions[ns])

    def _rows(self, namespace: Sequence[str], archived: bool | None) -> list[MemoryRow]:
        ns = ns_text(namespace)
        with self._lock:
            found = sorted((seq, ident[1], row) for ident, (seq, row) in self._memories.items() if ident[0] == ns)
        return [row for _, _, row in found if archived is None or row.archived == archived]

    @contextlib.contextmanager
    def exclusive(self, namespace: Sequence[str]) -> Iterator[SaveBlock]:
        ns = ns_text(namespace)
        self._held.refuse_reentry(ns)
        with self._lock:
            save_lock = self._save_locks.setdefault(ns, threading.Lock())
        with save_lock, self._held.holding(ns, self._ns_versions[ns]) as block:
            yield block

    def memory_version(self, namespace: Sequence[str]) -> int:
        ns = ns_text(namespace)
        with self._lock:
            return self._ns_versions[ns]

    def list_memories(self, namespace: Sequence[str], *, archived: bool | None = False) -> list[MemoryRow]:
        return self._rows(namespace, archived)

    def count_memories(self, namespace: Sequence[str], *, archived: bool | None = False) -> int:
        return len(self._rows(namespace, archived))

    def touch_memories(
        self, namespace: Sequence[str], ids: Sequence[str], now: datetime, rescore: Rescore
    ) -> list[MemoryRow]:
        ns, t, touched = ns_text(namespace), naive(now), []
        with self._lock:
            for key in dict.fromkeys(ids):
                seq, row = self._memories.get((ns, key), (0, None))
                if row is None or row.archived:
                    continue
                new = replace(
                    row,
                    access_count=row.access_count + 1,
                    relevance_score=float(rescore(row)),
                    last_accessed_at=max(t, row.last_accessed_at),
                )
                self._memories[(ns, key)] = (seq, new)
                touched.append(new)
        return touched

    def _flip(self, namespace: Sequence[str], ids: Sequence[str], archived: bool, **changes: Any) -> int:
        ns, changed = ns_text(namespace), 0
        with self._lock:
            for key in dict.fromkeys(ids):
                seq, row = self._memories.get((ns, key), (0, None))
                if row is not None and row.archived != archived:
                    self._memories[(ns, key)] = (seq, replace(row, archived=archived, **changes))
                    changed += 1
            if changed:
                self._count_write(ns)
        return changed

    def archive_memories(self, namespace: Sequence[str], ids: Sequence[str]) -> int:
        return self._flip(namespace, ids, True)

    def restore_memories(self, namespace: Sequence[str], ids: Sequence[str], now: datetime) -> int:
        return self._flip(namespace, ids, False, relevance_score=1.0, last_accessed_at=naive(now))

    def memory_namespaces(self, within: Sequence[str] = ()) -> list[tuple[str, ...]]:
        head = tuple(within)
        with self._lock:
            found = {tuple(json.loads(ns)) for ns, _ in self._memories}
        return sorted(ns for ns in found if ns[: len(head)] == head)

    def delete_memories(self, namespace: Sequence[str]) -> int:
        ns = ns_text(namespace)
        with self._lock:
            gone = [ident for ident in self._memories if ident[0] == ns]
            for ident in gone:
                del self._memories[ident]
            if gone:
                self._count_write(ns)
        return len(gone)


def _stored(row: MemoryRow) -> MemoryRow:
    """The row as a database would return it: value through JSON, naive UTC times."""
    return replace(
        row,
        namespace=tuple(row.namespace),
        value=json.loads(encode_value(row.value)),
        created_at=naive(row.created_at),
        last_accessed_at=naive(row.last_accessed_at),
    )
