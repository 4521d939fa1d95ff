"""Long-term memory rows: what a store keeps of each memory, and the operations every backend provides.

A row is the first design document's ``ah_long_term_memory`` row: an id, the namespace (a path
such as ``["agent:chat", "user:42", "memories"]``, stored as its compact JSON array), the JSON
value, and the lifecycle columns (access count, last access, relevance score, archived). Every
operation is scoped to one namespace, and ids and namespaces compare byte for byte on every
backend (``alice`` is not ``Alice``, ``X`` is not ``X ``).

Lifecycle changes are made where the data lives, never by writing back a process's copy:
an access increments ``access_count`` in the store and rescores the row it finds there; an
archive or restore only changes a row that is not already in the wanted state. So several
services on one database lose no update and never resurrect an archived memory. Each namespace
has a change counter, its version, raised by every write that changes which of its rows are active
(an add that stores a new row, an archive, a restore, a delete) in that write's transaction, so a
reader's copy is current exactly when the version is what the copy read (one key lookup, where
counting the active rows read all of them). A save that must first read the
namespace (the duplicate check) runs under `MemoryRows.exclusive`, the namespace's lock across
processes, and learns from its `SaveBlock` whether anyone else wrote since its own last save.

>>> ns_text(["agent:chat", "user:42", "memories"])
'["agent:chat","user:42","memories"]'
"""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol, runtime_checkable

from memlab.errors import StoreKeyError

# Keys, ids and namespaces are VARCHAR(255) columns (the design document's MySQL lesson: no TEXT keys).
MAX_KEY_LENGTH = 255


@dataclass(frozen=True)
class MemoryRow:
    """One stored long-term memory; times are naive UTC.

    Args:
        namespace: The namespace it belongs to (user, agent, ...).
        id: Its id, unique in the namespace.
        value: The memory itself (content, evidence, ...).
        type: FACT, PREFERENCE, PROCEDURE or EPISODE.
        source: Who saved it (extraction or the agent's tool).
        created_at: When it was saved (naive UTC).
        last_accessed_at: When it was last retrieved (naive UTC).
        access_count: How often it was retrieved.
        relevance_score: Its decayed relevance.
        archived: Kept, no longer served.
    """

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


@dataclass
class SaveBlock:
    """A namespace's save lock while held (`MemoryRows.exclusive`): the namespace's version when the block
    began, and after the block's own writes (None once another writer's write came in between).

    A writer that keeps a copy of the rows remembers `after`; when its next block begins at that
    version, nobody else changed which rows are active in between and its copy is current.

    Args:
        before: The namespace's version when the block began.
    """

    before: int
    after: int | None = field(init=False)

    def __post_init__(self) -> None:
        self.after = self.before

    def wrote(self, old: int, new: int) -> None:
        """This block's write took the version from `old` to `new`."""
        self.after = new if self.after == old else None


class HeldBlocks(threading.local):
    """The save blocks this thread holds, by stored namespace: where a store reports its writes."""

    def __init__(self) -> None:
        self.blocks: dict[str, SaveBlock] = {}

    def refuse_reentry(self, ns: str) -> None:
        """Before taking namespace `ns`'s save lock: this thread holding it already would wait for itself."""
        if ns in self.blocks:
            raise RuntimeError(f"the save lock of namespace {ns} is not reentrant")

    @contextlib.contextmanager
    def holding(self, ns: str, before: int) -> Iterator[SaveBlock]:
        """This thread's block on `ns`, which began at version `before`, until the block ends."""
        block = self.blocks[ns] = SaveBlock(before)
        try:
            yield block
        finally:
            del self.blocks[ns]

    def wrote(self, ns: str, old: int, new: int) -> None:
        """A write of this thread took namespace `ns` from version `old` to `new`."""
        block = self.blocks.get(ns)
        if block is not None:
            block.wrote(old, new)


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

    def memory_version(self, namespace: Sequence[str]) -> int:
        """The namespace's version now (0 before its first write): one read, no lock."""
        ...

    def exclusive(self, namespace: Sequence[str]) -> AbstractContextManager[SaveBlock]:
        """Hold the namespace's save lock until the block ends, against every thread and process on this store.

        Yields the block's `SaveBlock`, which this thread's adds, archives and restores in the namespace update.
        Not reentrant.
        """
        ...

    def memory_namespaces(self, within: Sequence[str] = ()) -> list[tuple[str, ...]]:
        """Every namespace holding rows whose leading parts are `within` (all of them for ``()``), sorted."""
        ...

    def delete_memories(self, namespace: Sequence[str]) -> int:
        """Remove the namespace's rows, archived ones too; returns how many."""
        ...


def ns_text(namespace: Sequence[str]) -> str:
    """The stored form of a namespace: its compact JSON array (at most 255 characters).

    Args:
        namespace: The namespace's parts.
    """
    if isinstance(namespace, str):
        raise TypeError(f"a namespace is a list of strings such as ['agent:chat', 'user:42'], not {namespace!r}")
    text = json.dumps([str(part) for part in namespace], ensure_ascii=False, separators=(",", ":"))
    if len(text) > MAX_KEY_LENGTH:
        raise StoreKeyError(
            f"namespace {text[:60]}... is {len(text)} characters stored; at most {MAX_KEY_LENGTH} "
            "(a user or agent id too long for a store; a run's own scope adds its prefix)"
        )
    return text


def check_key(key: str) -> str:
    """A memory id or session id: non-empty, at most 255 characters (the same limit on every backend)."""
    if not isinstance(key, str) or not key or len(key) > MAX_KEY_LENGTH:
        shown = repr(key) if not isinstance(key, str) or len(key) <= 80 else f"{key[:60]!r}... ({len(key)} characters)"
        raise StoreKeyError(
            f"a key or session id is a non-empty string of at most {MAX_KEY_LENGTH} characters, not {shown} "
            "(a dataset's dialogue id, as the store keeps it)"
        )
    return key


def encode_value(value: Mapping[str, Any]) -> str:
    """The canonical JSON text of a row's value (sorted keys), the same on every backend."""
    if not isinstance(value, Mapping):
        raise TypeError(f"a memory value is a JSON object (a dict), not {type(value).__name__}")
    return json.dumps(dict(value), sort_keys=True, ensure_ascii=False, separators=(",", ":"))
