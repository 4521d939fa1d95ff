"""The long-term memory table, the source of truth every index is rebuilt from.

One SQLAlchemy Core table shaped like the design document's ``ah_long_term_memory``:
``id VARCHAR(255)`` primary key (MySQL cannot key on TEXT), the namespace as its JSON
array, ``value_json``, and the lifecycle columns. Writes are upserts in each dialect's own
syntax (``ON CONFLICT DO UPDATE`` on SQLite and PostgreSQL, ``ON DUPLICATE KEY UPDATE`` on
MySQL/MariaDB, as the document's MysqlDatabaseStore does). Every call reads or writes one
namespace only, so no caller can reach another user's or agent's rows.
"""

from __future__ import annotations

import itertools
import json
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from typing import Any, Protocol, runtime_checkable

import sqlalchemy as sa
from sqlalchemy.dialects import mysql, postgresql, sqlite
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.pool import StaticPool

from memlab.errors import MemlabError
from memlab.longterm.model import Memory, MemoryType, namespace_key

TABLE_NAME = "ah_long_term_memory"
KEY_LENGTH = 255
_TIMESTAMP = sa.DateTime().with_variant(mysql.DATETIME(fsp=6), "mysql", "mariadb")


@runtime_checkable
class MemoryStore(Protocol):
    """Where long-term memories live; every method is scoped to one namespace."""

    def put(self, memories: Sequence[Memory]) -> None:
        """Insert or update (upsert by id)."""

    def list(self, namespace: tuple[str, ...], *, archived: bool | None = False) -> list[Memory]:
        """The namespace's memories, oldest first; `archived=None` lists both kinds."""

    def set_archived(self, namespace: tuple[str, ...], ids: Sequence[str], archived: bool) -> int:
        """Archive or restore; returns how many rows of this namespace changed."""

    def count(self, namespace: tuple[str, ...], *, archived: bool | None = False) -> int: ...


def memory_table(metadata: sa.MetaData, name: str = TABLE_NAME) -> sa.Table:
    return sa.Table(
        name,
        metadata,
        sa.Column("id", sa.String(KEY_LENGTH), primary_key=True),
        sa.Column("namespace", sa.String(KEY_LENGTH), nullable=False),
        sa.Column("value_json", sa.Text, nullable=False),
        sa.Column("type", sa.String(16), nullable=False),
        sa.Column("source", sa.String(32), nullable=False),
        sa.Column("created_at", _TIMESTAMP, nullable=False),
        sa.Column("last_accessed_at", _TIMESTAMP, nullable=False),
        sa.Column("access_count", sa.Integer, nullable=False, default=0),
        sa.Column("relevance_score", sa.Float, nullable=False, default=1.0),
        sa.Column("archived", sa.Boolean, nullable=False, default=False),
        sa.Column("seq", sa.BigInteger, nullable=False, default=0),  # insertion order, for stable listings
        sa.Index(f"ix_{name}_namespace", "namespace", "archived"),
    )


def make_engine(url: str) -> Engine:
    """An engine for `url`; in-memory SQLite is one connection shared by every thread."""
    try:
        if url in ("sqlite://", "sqlite:///:memory:"):
            return sa.create_engine(url, poolclass=StaticPool, connect_args={"check_same_thread": False})
        return sa.create_engine(url, pool_pre_ping=True)
    except (sa.exc.ArgumentError, ImportError) as e:
        raise MemlabError(f"longterm.url {url!r} is not a usable database URL ({e})") from None


class SqlMemoryStore:
    """`MemoryStore` on SQLAlchemy Core: SQLite (default, in memory), PostgreSQL, MySQL/MariaDB."""

    def __init__(self, url: str | Engine = "sqlite://", table: str = TABLE_NAME) -> None:
        self.engine = url if isinstance(url, Engine) else make_engine(url)
        self.dialect = self.engine.dialect.name
        if self.dialect not in ("sqlite", "postgresql", "mysql", "mariadb"):
            raise MemlabError(f"longterm store: unsupported database {self.dialect!r}; use sqlite, postgresql or mysql")
        self.metadata = sa.MetaData()
        self.table = memory_table(self.metadata, table)
        # SQLite serialises writers itself but one shared in-memory connection must not be used by two threads.
        self._lock = threading.RLock() if self.dialect == "sqlite" else None
        self.metadata.create_all(self.engine)
        self._statement = self._upsert()
        with self._begin() as conn:
            last = int(conn.execute(sa.select(sa.func.coalesce(sa.func.max(self.table.c.seq), 0))).scalar_one())
        self._seq = itertools.count(last + 1)  # next() is atomic, so concurrent writers never share a number

    @contextmanager
    def _begin(self) -> Iterator[Connection]:
        if self._lock is None:
            with self.engine.begin() as conn:
                yield conn
            return
        with self._lock, self.engine.begin() as conn:
            yield conn

    def _row(self, m: Memory, seq: int) -> dict[str, Any]:
        return {
            "id": m.id,
            "namespace": namespace_key(m.namespace),
            "value_json": json.dumps(m.value(), ensure_ascii=False, sort_keys=True),
            "type": str(m.type),
            "source": m.source,
            "created_at": m.created_at,
            "last_accessed_at": m.last_accessed_at,
            "access_count": m.access_count,
            "relevance_score": m.relevance_score,
            "archived": m.archived,
            "seq": seq,
        }

    def _upsert(self) -> Any:
        """One upsert statement, compiled once and executed with many rows."""
        t = self.table
        updated = [c.name for c in t.columns if c.name not in ("id", "namespace", "created_at", "seq")]
        if self.dialect in ("mysql", "mariadb"):
            my = mysql.insert(t)
            same = t.c.namespace == my.inserted.namespace
            return my.on_duplicate_key_update({c: sa.case((same, my.inserted[c]), else_=t.c[c]) for c in updated})
        ins = (sqlite.insert if self.dialect == "sqlite" else postgresql.insert)(t)
        # A row is only ever updated by a writer of its own namespace (ids are never taken from callers).
        return ins.on_conflict_do_update(
            index_elements=[t.c.id],
            set_={c: ins.excluded[c] for c in updated},
            where=t.c.namespace == ins.excluded.namespace,
        )

    def put(self, memories: Sequence[Memory]) -> None:
        if not memories:
            return
        rows = [self._row(m, next(self._seq)) for m in memories]
        with self._begin() as conn:
            conn.execute(self._statement, rows)

    def list(self, namespace: tuple[str, ...], *, archived: bool | None = False) -> list[Memory]:
        t = self.table
        query = sa.select(t).where(t.c.namespace == namespace_key(namespace))
        if archived is not None:
            query = query.where(t.c.archived == archived)
        with self._begin() as conn:
            rows = conn.execute(query.order_by(t.c.seq, t.c.id)).mappings().all()
        return [self._memory(r) for r in rows]

    def set_archived(self, namespace: tuple[str, ...], ids: Sequence[str], archived: bool) -> int:
        if not ids:
            return 0
        t = self.table
        stmt = (
            sa.update(t)
            .where(t.c.namespace == namespace_key(namespace), t.c.id.in_(list(ids)), t.c.archived != archived)
            .values(archived=archived)
        )
        with self._begin() as conn:
            return int(conn.execute(stmt).rowcount or 0)

    def count(self, namespace: tuple[str, ...], *, archived: bool | None = False) -> int:
        t = self.table
        query = sa.select(sa.func.count()).select_from(t).where(t.c.namespace == namespace_key(namespace))
        if archived is not None:
            query = query.where(t.c.archived == archived)
        with self._begin() as conn:
            return int(conn.execute(query).scalar_one())

    def drop(self) -> None:
        """Drop the table (tests and throwaway stores)."""
        self.metadata.drop_all(self.engine)

    @staticmethod
    def _memory(row: Any) -> Memory:
        value = json.loads(row["value_json"])
        return Memory(
            id=row["id"],
            namespace=tuple(json.loads(row["namespace"])),
            content=value["content"],
            type=MemoryType(row["type"]),
            source=row["source"],
            agent_id=value.get("agentId", ""),
            created_at=_naive(row["created_at"]),
            last_accessed_at=_naive(row["last_accessed_at"]),
            evidence=tuple(value.get("evidence", ())),
            context=value.get("context", ""),
            access_count=int(row["access_count"]),
            relevance_score=float(row["relevance_score"]),
            archived=bool(row["archived"]),
        )


def _naive(moment: datetime) -> datetime:
    return moment.replace(tzinfo=None) if moment.tzinfo else moment
