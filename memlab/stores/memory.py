"""The in-memory store: the default, and the reference every persisted backend must match.

Entries are kept as their canonical JSON text, so what comes back is exactly what a database
would return. One lock serializes writers; it lives in one process only.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from memlab.stores.base import Entry, SessionState, Update, decode, encode
from memlab.stores.kv import Record, check_key, encode_value, in_prefix, ns_text, utc


class InMemoryStore:
    """Sessions and key-value records in Python dicts (`store=memory`)."""

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._entries: dict[str, list[str]] = {}
        self._summaries: dict[str, str | None] = {}
        self._records: dict[tuple[str, str], tuple[str, datetime, datetime, bool]] = {}

    # --- sessions ---------------------------------------------------------------------

    def load(self, session_id: str) -> SessionState:
        with self._lock:
            bodies = list(self._entries.get(session_id, ()))
            summary = self._summaries.get(session_id)
        return SessionState(tuple(decode(b) for b in bodies), summary)

    def append(self, session_id: str, entries: Sequence[Entry]) -> None:
        check_key(session_id)
        bodies = [encode(e) for e in entries]
        with self._lock:
            self._entries.setdefault(session_id, []).extend(bodies)
            self._summaries.setdefault(session_id, None)

    def update(self, session_id: str, fn: Update) -> SessionState:
        check_key(session_id)
        with self._lock:
            old = self.load(session_id)
            new = fn(old)
            self._entries.setdefault(session_id, [])  # an update creates the session, as on every backend
            self._summaries.setdefault(session_id, None)
            if new is None or new == old:
                return old
            bodies = [encode(e) for e in new.entries]
            self._entries[session_id] = bodies
            self._summaries[session_id] = new.summary
            return SessionState(tuple(decode(b) for b in bodies), new.summary)

    def exists(self, session_id: str) -> bool:
        with self._lock:
            return session_id in self._entries

    def count(self, session_id: str) -> int:
        with self._lock:
            return len(self._entries.get(session_id, ()))

    def sessions(self) -> list[str]:
        with self._lock:
            return sorted(self._entries)

    def delete_session(self, session_id: str) -> None:
        with self._lock:
            self._entries.pop(session_id, None)
            self._summaries.pop(session_id, None)

    def close(self) -> None:
        """Nothing to release (the data lives as long as the object)."""

    # --- key-value records ------------------------------------------------------------

    def put(self, namespace: Sequence[str], key: str, value: Mapping[str, Any], *, now: datetime | None = None) -> None:
        ident = (ns_text(namespace), check_key(key))
        body, t = encode_value(value), utc(now)
        with self._lock:
            old = self._records.get(ident)
            self._records[ident] = (body, old[1] if old else t, t, old[3] if old else False)

    def get(self, namespace: Sequence[str], key: str) -> Record | None:
        ident = (ns_text(namespace), key)
        with self._lock:
            row = self._records.get(ident)
        return None if row is None else _record(ident, row)

    def delete(self, namespace: Sequence[str], key: str) -> bool:
        with self._lock:
            return self._records.pop((ns_text(namespace), key), None) is not None

    def search(self, prefix: Sequence[str] = (), *, include_archived: bool = False) -> list[Record]:
        with self._lock:
            rows = sorted(self._records.items())
        return [_record(i, r) for i, r in rows if in_prefix(i[0], prefix) and (include_archived or not r[3])]

    def set_archived(
        self, namespace: Sequence[str], key: str, archived: bool = True, *, now: datetime | None = None
    ) -> bool:
        ident = (ns_text(namespace), key)
        with self._lock:
            row = self._records.get(ident)
            if row is None:
                return False
            self._records[ident] = (row[0], row[1], utc(now), archived)
            return True


def _record(ident: tuple[str, str], row: tuple[str, datetime, datetime, bool]) -> Record:
    return Record(tuple(json.loads(ident[0])), ident[1], json.loads(row[0]), row[1], row[2], row[3])
