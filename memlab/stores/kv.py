"""Namespaced JSON records: the table long-term memories live in.

A namespace is a path such as ``["agent:chat", "user:42", "memories"]`` (first design document);
a record is a JSON object under a key in it, with created/updated times and an `archived` flag
(archived records are kept, never deleted by decay, and can be restored). `search` lists a
namespace and everything below it. Writes are upserts, atomic on every backend.

>>> ns_text(["agent:chat", "user:42", "memories"])
'["agent:chat","user:42","memories"]'
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Protocol, runtime_checkable

# Keys and namespaces are VARCHAR(255) columns (the design document's MySQL lesson: no TEXT keys).
MAX_KEY_LENGTH = 255


@dataclass(frozen=True)
class Record:
    """One stored JSON value and its bookkeeping."""

    namespace: tuple[str, ...]
    key: str
    value: dict[str, Any]
    created_at: datetime
    updated_at: datetime
    archived: bool = False


@runtime_checkable
class KeyValueStore(Protocol):
    """Namespaced JSON records; safe for concurrent readers and writers."""

    def put(self, namespace: Sequence[str], key: str, value: Mapping[str, Any], *, now: datetime | None = None) -> None:
        """Insert or replace the value (upsert); `created_at` and `archived` of an existing record are kept."""
        ...

    def get(self, namespace: Sequence[str], key: str) -> Record | None: ...

    def delete(self, namespace: Sequence[str], key: str) -> bool:
        """Remove for good; True if there was such a record."""
        ...

    def search(self, prefix: Sequence[str] = (), *, include_archived: bool = False) -> list[Record]:
        """Records in `prefix` or any namespace below it, ordered by stored namespace text (`ns_text`), then key."""
        ...

    def set_archived(
        self, namespace: Sequence[str], key: str, archived: bool = True, *, now: datetime | None = None
    ) -> bool:
        """Archive or restore; True if there was such a record."""
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
    """A record key or session id: non-empty, at most 255 characters (the same limit on every backend)."""
    if not isinstance(key, str) or not key or len(key) > MAX_KEY_LENGTH:
        raise ValueError(
            f"a key or session id is a non-empty string of at most {MAX_KEY_LENGTH} characters, not {key!r}"
        )
    return key


def in_prefix(namespace_text: str, prefix: Sequence[str]) -> bool:
    """Whether a stored namespace is `prefix` or lies below it."""
    if not prefix:
        return True
    p = ns_text(prefix)
    return namespace_text == p or namespace_text.startswith(p[:-1] + ",")


def utc(now: datetime | None) -> datetime:
    """`now` as an aware UTC time (the current time if None); naive times are taken as UTC."""
    if now is None:
        return datetime.now(UTC)
    return now.replace(tzinfo=UTC) if now.tzinfo is None else now.astimezone(UTC)


def encode_value(value: Mapping[str, Any]) -> str:
    if not isinstance(value, Mapping):
        raise TypeError(f"a record value is a JSON object (a dict), not {type(value).__name__}")
    return json.dumps(dict(value), sort_keys=True, ensure_ascii=False, separators=(",", ":"))
