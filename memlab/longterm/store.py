"""Long-term memories in the configured store (`store=memory|sqlite|postgres|mysql`).

`MemoryStore` turns `Memory` objects into the rows every `memlab.stores` backend keeps (the
first design document's ``ah_long_term_memory``: id, namespace, ``value_json`` and the
lifecycle columns) and back. The SQL itself, its migrations, retries and connections live in
`memlab.stores` once. Every call reads or writes one namespace only, and accesses, archives
and restores change the stored row where it is (see `memlab.stores.memories`), so several
services on one database neither lose updates nor resurrect an archived memory; a save that
checks for duplicates first runs under `saving`, the namespace's lock across processes.
"""

from __future__ import annotations

import builtins
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from datetime import datetime
from typing import Any

from memlab.errors import MemlabError
from memlab.longterm.model import Memory, MemoryType
from memlab.stores import InMemoryStore, MemoryRow, MemoryRows, SaveBlock, close_store


def to_row(m: Memory) -> MemoryRow:
    return MemoryRow(
        namespace=m.namespace,
        id=m.id,
        value=m.value(),
        type=str(m.type),
        source=m.source,
        created_at=m.created_at,
        last_accessed_at=m.last_accessed_at,
        access_count=m.access_count,
        relevance_score=m.relevance_score,
        archived=m.archived,
    )


def to_memory(row: MemoryRow) -> Memory:
    return Memory(
        id=row.id,
        namespace=row.namespace,
        content=row.value["content"],
        type=MemoryType(row.type),
        source=row.source,
        agent_id=row.value.get("agentId", ""),
        created_at=row.created_at,
        last_accessed_at=row.last_accessed_at,
        evidence=tuple(row.value.get("evidence", ())),
        context=row.value.get("context", ""),
        revises=tuple(row.value.get("revises", ())),
        access_count=row.access_count,
        relevance_score=row.relevance_score,
        archived=row.archived,
    )


class MemoryStore:
    """Long-term memories of every namespace in one `memlab.stores` backend (default: in memory).

    Args:
        rows: A `memlab.stores` backend that keeps memory rows (memory, sqlite, postgres, mysql); None: in memory.
    """

    def __init__(self, rows: Any = None) -> None:
        if rows is None:
            rows = InMemoryStore()
        if not isinstance(rows, MemoryRows):
            backend = getattr(rows, "store", rows)  # a run's scope wraps the configured store
            raise MemlabError(
                f"longterm.store: {type(backend).__name__} keeps sessions only (store=redis, say); long-term memory "
                "needs store=memory, sqlite, postgres or mysql"
            )
        self.rows = rows

    def add(self, memories: Sequence[Memory]) -> int:
        """Insert new memories (an id already stored in its namespace is kept as stored); returns how many."""
        return self.rows.add_memories([to_row(m) for m in memories]) if memories else 0

    def list(self, namespace: tuple[str, ...], *, archived: bool | None = False) -> list[Memory]:
        """The namespace's memories, oldest first; `archived=None` lists both kinds."""
        return [to_memory(r) for r in self.rows.list_memories(namespace, archived=archived)]

    def count(self, namespace: tuple[str, ...], *, archived: bool | None = False) -> int:
        return self.rows.count_memories(namespace, archived=archived)

    def touch(
        self, namespace: tuple[str, ...], ids: Sequence[str], now: datetime, rescore: Callable[[Memory], float]
    ) -> builtins.list[Memory]:
        """Record an access (count + 1, score `rescore(stored memory)`); returns the active memories after it."""
        rows = self.rows.touch_memories(namespace, ids, now, lambda row: rescore(to_memory(row)))
        return [to_memory(r) for r in rows]

    def archive(self, namespace: tuple[str, ...], ids: Sequence[str]) -> int:
        """Archive the active memories among `ids`; returns how many changed."""
        return self.rows.archive_memories(namespace, ids) if ids else 0

    def restore(self, namespace: tuple[str, ...], ids: Sequence[str], now: datetime) -> int:
        """Restore the archived memories among `ids` (score 1, clock restarted); returns how many changed."""
        return self.rows.restore_memories(namespace, ids, now) if ids else 0

    def version(self, namespace: tuple[str, ...]) -> int:
        """The namespace's version: raised by every write that changes which of its rows are active."""
        return self.rows.memory_version(namespace)

    def saving(self, namespace: tuple[str, ...]) -> AbstractContextManager[SaveBlock]:
        """Hold the namespace's save lock (every thread and process on this store) for a read-check-insert;
        yields its `SaveBlock`: the namespace's version before the block and after this block's writes."""
        return self.rows.exclusive(namespace)

    def close(self) -> None:
        close_store(self.rows)
