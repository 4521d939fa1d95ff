"""Long-term memory rows: what a store keeps of each memory, and the operations every backend provides.

A row is the first design document's ``ah_long_term_memory`` row: an id, the namespace (a path
such as ``["agent:chat", "user:42", "memories"]``, stored as its compact JSON array), the JSON
value, and the lifecycle columns (access count, last access, relevance score, archived). Every
operation is scoped to one namespace, and ids and namespaces compare byte for byte on every
backend (``alice`` is not ``Alice``, ``X`` is not ``X ``).

Lifecycle changes are made where the data lives, never by writing back a process's copy:
an access increments ``access_count`` in the store and rescores the row it finds there; an
archive or restore only changes a row that is not already in the wanted state. So several
services on one database lose no update and never resurrect an archived memory.

>>> ns_text(["agent:chat", "user:42", "memories"])
'["agent:chat","user:42","memories"]'
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Protocol, runtime_checkable

# Keys, ids and namespaces are VARCHAR(255) columns (the design document's MySQL lesson: no TEXT keys).
MAX_KEY_LENGTH = 255


@dataclass(frozen=True)
class MemoryRow:
    """One stored long-term memory; times are naive UTC."""

    namespace: tuple[str, ...]
    id: str
    value: dict[str, Any]
    type: str
    source: str
    created_at: datetime
    last_accessed_at: datetime
    access_count: int = 0
    relevance_score: float = 1.0
    archived: bool = False


Rescore = Callable[[MemoryRow], float]


@runtime_checkable
class MemoryRows(Protocol):
    """Long-term memory rows, one namespace per call; safe for concurrent threads and processes."""

    def add_memories(self, rows: Sequence[MemoryRow]) -> int:
        """Insert new rows (an id already in the namespace is left as stored); returns how many were new."""
        ...

    def list_memories(self, namespace: Sequence[str], *, archived: bool | None = False) -> list[MemoryRow]:
        """The namespace's rows in insertion order; `archived=None` lists both kinds."""
        ...

    def count_memories(self, namespace: Sequence[str], *, archived: bool | None = False) -> int: ...

    def touch_memories(
        self, namespace: Sequence[str], ids: Sequence[str], now: datetime, rescore: Rescore
    ) -> list[MemoryRow]:
        """Record an access of each active row: ``access_count + 1``, score ``rescore(stored row)``,
        last access ``max(now, stored)``; returns the rows as stored afterwards (archived ones untouched)."""
        ...

    def archive_memories(self, namespace: Sequence[str], ids: Sequence[str]) -> int:
        """Archive the active rows among `ids`; returns how many changed."""
        ...

    def restore_memories(self, namespace: Sequence[str], ids: Sequence[str], now: datetime) -> int:
        """Restore the archived rows among `ids` (score 1, clock restarted at `now`); returns how many changed."""
        ...

    def memory_namespaces(self, within: Sequence[str] = ()) -> list[tuple[str, ...]]:
        """Every namespace holding rows whose leading parts are `within` (all of them for ``()``), sorted."""
        ...

    def delete_memories(self, namespace: Sequence[str]) -> int:
        """Remove the namespace's rows, archived ones too; returns how many."""
        ...


def ns_text(namespace: Sequence[str]) -> str:
    """The stored form of a namespace: its compact JSON array (at most 255 characters)."""
    if isinstance(namespace, str):
        raise TypeError(f"a namespace is a list of strings such as ['agent:chat', 'user:42'], not {namespace!r}")
    text = json.dumps([str(part) for part in namespace], ensure_ascii=False, separators=(",", ":"))
    if len(text) > MAX_KEY_LENGTH:
        raise ValueError(f"namespace {text[:60]}... is {len(text)} characters stored; at most {MAX_KEY_LENGTH}")
    return text


def check_key(key: str) -> str:
    """A memory id or session id: non-empty, at most 255 characters (the same limit on every backend)."""
    if not isinstance(key, str) or not key or len(key) > MAX_KEY_LENGTH:
        raise ValueError(
            f"a key or session id is a non-empty string of at most {MAX_KEY_LENGTH} characters, not {key!r}"
        )
    return key


def naive(moment: datetime) -> datetime:
    """`moment` as naive UTC (naive times are taken as UTC already)."""
    return moment.astimezone(UTC).replace(tzinfo=None) if moment.tzinfo else moment


def encode_value(value: Mapping[str, Any]) -> str:
    """The canonical JSON text of a row's value (sorted keys), the same on every backend."""
    if not isinstance(value, Mapping):
        raise TypeError(f"a memory value is a JSON object (a dict), not {type(value).__name__}")
    return json.dumps(dict(value), sort_keys=True, ensure_ascii=False, separators=(",", ":"))
