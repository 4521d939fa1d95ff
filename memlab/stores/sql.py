"""The SQL store through SQLAlchemy Core: SQLite (embedded default), PostgreSQL, MySQL/MariaDB.

Schema lessons from the first design document: keys are VARCHAR(255), not TEXT (MySQL cannot
index TEXT), and upserts are written per dialect (``INSERT ... ON CONFLICT`` on PostgreSQL and
SQLite, ``INSERT ... ON DUPLICATE KEY UPDATE`` on MySQL) instead of H2's ``MERGE INTO``. The
schema is created and migrated by `migrate()` (idempotent, versioned, under a lock), never by hand.

Concurrency: a session's writes lock its row in `memlab_sessions` (``SELECT ... FOR UPDATE``;
SQLite takes the database write lock with ``BEGIN IMMEDIATE`` and runs in WAL mode), so appends
and compactions from many threads and processes serialize per session, and bump its `version`
in the same transaction; deadlocks and busy databases are retried. A long-term namespace's save
lock (`SqlStore.exclusive`) is ``pg_advisory_lock`` on PostgreSQL, ``GET_LOCK`` on MySQL/MariaDB,
and on SQLite one ``BEGIN IMMEDIATE`` transaction that the block's statements join.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import random
import re
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

import sqlalchemy as sa
from sqlalchemy import event
from sqlalchemy.dialects import mysql, postgresql, sqlite
from sqlalchemy.engine import Connection, Engine

from memlab.errors import MemlabError
from memlab.messages import naive
from memlab.stores.base import Entry, SessionState, Update, decode, encode, plan_update
from memlab.stores.memories import (
    MAX_KEY_LENGTH,
    HeldBlocks,
    MemoryRow,
    Rescore,
    SaveBlock,
    check_key,
    encode_value,
    ns_text,
)

T = TypeVar("T")

MAX_RETRIES = 12  # transient failures (deadlock, lock timeout, busy database) before giving up
RETRY_BASE_SECONDS = 0.005
SQLITE_BUSY_TIMEOUT_MS = 30_000
LOCK_WAIT_SECONDS = 600  # GET_LOCK's wait for another process's save lock (PostgreSQL waits as for row locks)

_MYSQL = ("mysql", "mariadb")
Key = sa.String(MAX_KEY_LENGTH).with_variant(
    mysql.VARCHAR(MAX_KEY_LENGTH, charset="utf8mb4", collation="utf8mb4_bin"), *_MYSQL
)
Body = sa.Text().with_variant(mysql.LONGTEXT(charset="utf8mb4", collation="utf8mb4_bin"), *_MYSQL)
Stamp = sa.DateTime().with_variant(mysql.DATETIME(fsp=6), *_MYSQL)
_TABLE_OPTIONS: dict[str, Any] = {
    f"{d}_{k}": v for d in _MYSQL for k, v in (("engine", "InnoDB"), ("charset", "utf8mb4"))
}

metadata = sa.MetaData()
schema_version = sa.Table(
    "memlab_schema_version",
    metadata,
    sa.Column("version", sa.Integer, primary_key=True, autoincrement=False),
    sa.Column("description", sa.String(MAX_KEY_LENGTH), nullable=False),
    sa.Column("applied_at", Stamp, nullable=False),
    **_TABLE_OPTIONS,
)
sessions = sa.Table(
    "memlab_sessions",
    metadata,
    sa.Column("session_id", Key, primary_key=True),
    sa.Column("summary", Body, nullable=True),
    sa.Column("next_seq", sa.BigInteger, nullable=False),
    sa.Column("created_at", Stamp, nullable=False),
    sa.Column("updated_at", Stamp, nullable=False),
    sa.Column("version", sa.BigInteger, nullable=False),  # SessionStore.version (migration 6)
    **_TABLE_OPTIONS,
)
# The version a deleted session had reached, so that one written again goes on counting from it.
deleted_versions = sa.Table(
    "memlab_session_versions",
    metadata,
    sa.Column("session_id", Key, primary_key=True),
    sa.Column("version", sa.BigInteger, nullable=False),
    **_TABLE_OPTIONS,
)
session_entries = sa.Table(
    "memlab_session_entries",
    metadata,
    sa.Column("session_id", Key, primary_key=True),
    sa.Column("seq", sa.BigInteger, primary_key=True, autoincrement=False),
    sa.Column("body", Body, nullable=False),
    **_TABLE_OPTIONS,
)
memories = sa.Table(
    "ah_long_term_memory",  # the first design document's table
    metadata,
    sa.Column("namespace", Key, primary_key=True),
    sa.Column("id", Key, primary_key=True),
    sa.Column("seq", sa.BigInteger, nullable=False),  # insertion order within the namespace, for stable listings
    sa.Column("value_json", Body, nullable=False),
    sa.Column("type", sa.String(16), nullable=False),
    sa.Column("source", sa.String(32), nullable=False),
    sa.Column("created_at", Stamp, nullable=False),
    sa.Column("last_accessed_at", Stamp, nullable=False),
    sa.Column("access_count", sa.Integer, nullable=False),
    sa.Column("relevance_score", sa.Double, nullable=False),
    sa.Column("archived", sa.Boolean, nullable=False),
    sa.Index("ix_ah_long_term_memory_active", "namespace", "archived", "seq"),
    **_TABLE_OPTIONS,
)
# Each long-term namespace's version: the writes that made its rows active (see memlab.stores.memories).
namespace_versions = sa.Table(
    "memlab_namespace_versions",
    metadata,
    sa.Column("namespace", Key, primary_key=True),
    sa.Column("version", sa.BigInteger, nullable=False),
    **_TABLE_OPTIONS,
)
# Key columns per table, for the MySQL/MariaDB collation migration.
_KEYS = {
    "memlab_sessions": ("session_id",),
    "memlab_session_entries": ("session_id",),
    "memlab_records": ("namespace", "key"),
    "ah_long_term_memory": ("namespace", "id"),
    "memlab_session_versions": ("session_id",),
    "memlab_namespace_versions": ("namespace",),
}


def _sessions_v1() -> sa.Table:
    """`memlab_sessions` as migration 1 made it, before migration 6 added its version column."""
    columns = [c for c in sessions.columns if c.name != "version"]
    return sa.Table(
        "memlab_sessions",
        sa.MetaData(),
        *(sa.Column(c.name, c.type, primary_key=c.primary_key, nullable=c.nullable) for c in columns),
        **_TABLE_OPTIONS,
    )


def _legacy_records() -> sa.Table:
    """The namespaced key-value table of migration 2, used by nothing and dropped by migration 5."""
    return sa.Table(
        "memlab_records",
        sa.MetaData(),
        sa.Column("namespace", Key, primary_key=True),
        sa.Column("key", Key, primary_key=True),
        sa.Column("value_json", Body, nullable=False),
        sa.Column("archived", sa.Boolean, nullable=False),
        sa.Column("created_at", Stamp, nullable=False),
        sa.Column("updated_at", Stamp, nullable=False),
        **_TABLE_OPTIONS,
    )


@dataclass(frozen=True)
class Migration:
    """One schema step; `apply` must be idempotent (MySQL commits DDL as it goes)."""

    version: int
    description: str
    apply: Callable[[Connection], None]


def _create(*tables: sa.Table | Callable[[], sa.Table], binary_keys: bool = False) -> Callable[[Connection], None]:
    """Create `tables`; with `binary_keys`, give their keys the binary collation (from migration 3 on)."""

    def apply(conn: Connection) -> None:
        made = [table() if callable(table) else table for table in tables]
        for table in made:
            table.create(conn, checkfirst=True)
        if binary_keys:
            _binary_keys(conn, [t.name for t in made])

    return apply


def binary_collation(conn: Connection) -> str:
    """MySQL/MariaDB's binary collation without PAD SPACE: ``X`` and ``X `` are different keys."""
    return "utf8mb4_nopad_bin" if getattr(conn.dialect, "is_mariadb", False) else "utf8mb4_0900_bin"


def _binary_keys(conn: Connection, tables: Sequence[str] = tuple(_KEYS)) -> None:
    """Give every key column of every existing table the binary no-pad collation (MySQL/MariaDB only).

    ``utf8mb4_bin`` still pads with spaces, and a database's default (``utf8mb4_general_ci``)
    also ignores case and accents, which let ``alice`` read ``Alice``'s rows.
    """
    if conn.dialect.name not in _MYSQL:
        return
    collation = binary_collation(conn)
    present = set(sa.inspect(conn).get_table_names())
    for table in tables:
        columns = _KEYS.get(table, ())
        if table not in present or not columns:
            continue
        changes = ", ".join(
            f"MODIFY `{c}` VARCHAR({MAX_KEY_LENGTH}) CHARACTER SET utf8mb4 COLLATE {collation} NOT NULL"
            for c in columns
        )
        conn.exec_driver_sql(f"ALTER TABLE `{table}` {changes}")


def _drop_records(conn: Connection) -> None:
    _legacy_records().drop(conn, checkfirst=True)


def _add_session_versions(conn: Connection) -> None:
    """`memlab_sessions.version` (0 for the sessions already stored) and the deleted sessions' versions."""
    schema = conn.get_execution_options().get("schema_translate_map", {}).get(None)
    if "version" not in {c["name"] for c in sa.inspect(conn).get_columns("memlab_sessions", schema=schema)}:
        quote = conn.dialect.identifier_preparer
        table = quote.quote("memlab_sessions")
        if schema is not None:
            table = f"{quote.quote_schema(schema)}.{table}"
        conn.exec_driver_sql(f"ALTER TABLE {table} ADD COLUMN version BIGINT NOT NULL DEFAULT 0")
    _create(deleted_versions, binary_keys=True)(conn)


MIGRATIONS: tuple[Migration, ...] = (
    Migration(1, "sessions and their ordered entries", _create(_sessions_v1, session_entries)),
    Migration(2, "namespaced JSON records (long-term memories)", _create(_legacy_records)),
    Migration(3, "binary no-pad collation for every key column (MySQL/MariaDB)", _binary_keys),
    Migration(4, "long-term memories (ah_long_term_memory)", _create(memories, binary_keys=True)),
    Migration(5, "drop the unused key-value records", _drop_records),
    Migration(6, "a change counter per session (memlab_sessions.version)", _add_session_versions),
    Migration(7, "a change counter per long-term namespace", _create(namespace_versions, binary_keys=True)),
)
LATEST_VERSION = MIGRATIONS[-1].version


def _now() -> datetime:
    return naive(datetime.now(UTC))


def _hydra_run_dir() -> Path | None:
    from hydra.core.hydra_config import HydraConfig

    return Path(HydraConfig.get().runtime.output_dir) if HydraConfig.initialized() else None


_SCHEMA_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,62}")  # a PostgreSQL identifier that needs no quoting


class SqlStore:
    """Sessions and long-term memory rows in a SQL database (`store=sqlite|postgres|mysql`).

    `url` is any SQLAlchemy URL (``postgresql+psycopg://...``, ``mysql+pymysql://...``); `path`
    is a SQLite file, placed in the run directory when relative (`run_dir`, else Hydra's run
    directory, else the current directory). `schema` is a PostgreSQL schema to keep the tables in.
    Nothing connects until first use; the schema is migrated then.

    Parameters: the fields of `memlab.stores.schemas.SqliteStoreConfig`, `PostgresStoreConfig` and
    `MysqlStoreConfig` (memlab.stores.schemas), each documented there once.
    """

    def __init__(
        self,
        url: str | None = None,
        path: str | None = None,
        schema: str | None = None,
        run_dir: str | None = None,
        pool_size: int = 10,
    ) -> None:
        if (url is None) == (path is None):
            raise MemlabError(f"store: set exactly one of store.url or store.path (got url={url!r}, path={path!r})")
        if path is not None:
            file = Path(path)
            if not file.is_absolute():
                file = (Path(run_dir) if run_dir else _hydra_run_dir() or Path.cwd()) / file
            url = f"sqlite:///{file}"
        assert url is not None
        try:
            self.url = sa.engine.make_url(url)
        except sa.exc.ArgumentError as e:
            raise MemlabError(f"store.url: {url!r} is not a database URL ({e})") from e
        backend = self.url.get_backend_name()
        if backend not in ("sqlite", "postgresql", *_MYSQL):
            raise MemlabError(
                f"store.url: unsupported database {backend!r}; expected sqlite, postgresql, mysql or mariadb"
            )
        if schema is not None and backend != "postgresql":
            raise MemlabError(f"store.schema is for PostgreSQL only; for {backend} put the database in store.url")
        if schema is not None and (not _SCHEMA_NAME.fullmatch(schema) or schema.lower().startswith("pg_")):
            raise MemlabError(
                f"store.schema: {schema!r} is not a schema name memlab creates; expected letters, digits and _ "
                "(not first), at most 63, not starting with pg_"
            )
        self.schema = schema
        self.pool_size = pool_size
        self._engine: Engine | None = None
        self._migrated = False
        self._pid = os.getpid()
        self._guard = threading.RLock()
        self._jitter = random.Random()  # private: never disturbs the run's seeded global RNG
        self._joined = threading.local()  # .conn: this thread's SQLite `exclusive` transaction, if in one
        self._held = HeldBlocks()

    def __repr__(self) -> str:
        return f"SqlStore({self.url.render_as_string(hide_password=True)!r})"

    # --- engine, transactions, migrations -----------------------------------------------

    @property
    def dialect(self) -> str:
        return self._raw_engine().dialect.name

    @property
    def engine(self) -> Engine:
        """The engine, the schema migrated to the latest version on first use."""
        engine = self._raw_engine()
        if not self._migrated:
            with self._guard:
                if not self._migrated:
                    try:
                        self._migrate(engine)
                    except sa.exc.OperationalError as e:
                        where = self.url.render_as_string(hide_password=True)
                        raise MemlabError(f"store.url: cannot use the database at {where} ({e.orig})") from e
                    self._migrated = True
        return engine

    def _raw_engine(self) -> Engine:
        """The engine, created on first use and again in a forked child (never share a parent's connections)."""
        if self._engine is not None and self._pid != os.getpid():
            self._engine.dispose(close=False)
            self._engine = None
        if self._engine is None:
            with self._guard:
                if self._engine is None:
                    self._engine = self._make_engine()
                    self._pid = os.getpid()
        return self._engine

    def _make_engine(self) -> Engine:
        backend = self.url.get_backend_name()
        options: dict[str, Any] = {"pool_pre_ping": True}
        if backend == "sqlite":
            database = self.url.database
            if not database:
                raise MemlabError("store.path: an in-memory SQLite database cannot be shared; give a file path")
            try:
                Path(database).parent.mkdir(parents=True, exist_ok=True)
            except OSError as e:
                raise MemlabError(f"store.path: cannot create the folder of {database} ({e.strerror})") from None
            options["connect_args"] = {"check_same_thread": False, "timeout": SQLITE_BUSY_TIMEOUT_MS / 1000}
            options.update(pool_size=self.pool_size, max_overflow=self.pool_size)
        else:
            options.update(pool_size=self.pool_size, max_overflow=self.pool_size, isolation_level="READ COMMITTED")
            if backend in _MYSQL:
                options["connect_args"] = {"charset": "utf8mb4"}
        try:
            engine = sa.create_engine(self.url, **options)
        except ImportError as e:  # the URL names a driver that is not installed (postgresql+asyncpg, mysql+mysqldb)
            raise MemlabError(
                f"store.url: the driver of {self.url.drivername} is not installed ({e}); memlab installs "
                "postgresql+psycopg and mysql+pymysql"
            ) from None
        if backend == "sqlite":
            event.listen(engine, "connect", _sqlite_connect)
            event.listen(engine, "begin", _sqlite_begin)
        if self.schema is not None:
            engine = engine.execution_options(schema_translate_map={None: self.schema})
        return engine

    def _transaction(self, engine: Engine, fn: Callable[[Connection], T], *, read: bool = False) -> T:
        """Run `fn` in one transaction, retried on deadlocks, lock timeouts and busy databases.

        Inside a SQLite `exclusive` block, `fn` joins the block's transaction instead.
        """
        joined = getattr(self._joined, "conn", None)
        if joined is not None:
            return fn(joined)
        for attempt in range(MAX_RETRIES + 1):
            try:
                with engine.connect() as conn:
                    if read:
                        conn = conn.execution_options(**_read_options(engine.dialect.name))
                    with conn.begin():
                        return fn(conn)
            except sa.exc.DBAPIError as e:
                self._retry_or_raise(e, attempt)
        raise AssertionError("unreachable")

    def _retry_or_raise(self, error: sa.exc.DBAPIError, attempt: int) -> None:
        """Re-raise `error` unless it is transient and retries are left; then wait (exponential backoff, jitter)."""
        if attempt == MAX_RETRIES or not _transient(error):
            raise error
        time.sleep(RETRY_BASE_SECONDS * 2 ** min(attempt, 6) * (0.5 + self._jitter.random()))

    def _write(self, fn: Callable[[Connection], T]) -> T:
        return self._transaction(self.engine, fn)

    def _read(self, fn: Callable[[Connection], T]) -> T:
        return self._transaction(self.engine, fn, read=True)

    def migrate(self, upto: int | None = None) -> int:
        """Bring the schema to `upto` (default: the latest version); returns the version now."""
        version = self._migrate(self._raw_engine(), upto)
        self._migrated = version >= LATEST_VERSION
        return version

    def _migrate(self, engine: Engine, upto: int | None = None) -> int:
        target = LATEST_VERSION if upto is None else upto
        backend = engine.dialect.name

        def step(conn: Connection) -> int:
            if backend == "postgresql":
                conn.exec_driver_sql("SELECT pg_advisory_xact_lock(hashtext('memlab.migrate'))")
                if self.schema is not None:
                    conn.exec_driver_sql(f'CREATE SCHEMA IF NOT EXISTS "{self.schema}"')
            elif backend in _MYSQL:
                conn.exec_driver_sql("SELECT GET_LOCK('memlab.migrate', 60)")
            try:
                schema_version.create(conn, checkfirst=True)
                # A locking read sees the latest commit; MySQL's plain read would see this transaction's
                # snapshot, taken before another process finished migrating under the same lock.
                done = set(conn.execute(sa.select(schema_version.c.version).with_for_update()).scalars())
                for m in MIGRATIONS:
                    if m.version <= target and m.version not in done:
                        m.apply(conn)
                        conn.execute(
                            schema_version.insert().values(
                                version=m.version, description=m.description, applied_at=_now()
                            )
                        )
                        done.add(m.version)
                return max(done, default=0)
            finally:
                if backend in _MYSQL:
                    conn.exec_driver_sql("SELECT RELEASE_LOCK('memlab.migrate')")

        return self._transaction(engine, step)

    def schema_version(self) -> int:
        """The highest migration applied (0 for an empty database)."""
        return self._read(lambda c: c.execute(sa.select(sa.func.max(schema_version.c.version))).scalar() or 0)

    def close(self) -> None:
        """Close the pooled connections (the store reconnects if used again)."""
        if self._engine is not None:
            self._engine.dispose()
            self._engine = None

    def settle(self) -> None:
        """Once other processes are done with the database: fold SQLite's -wal file into it, then close.

        Replay workers close their connections together when their pool shuts down, and each may see another
        still open, so none checkpoints: the -wal and -shm files (the run's last rows in the -wal) stayed beside
        the database about one parallel run in eight. The parent, then the only process, closes its pool and
        checkpoints on a connection of its own (outside the engine's transactions), which closes last: SQLite
        removes both files. Other databases only close.
        """
        self.close()
        database = self.url.database
        if self.url.get_backend_name() == "sqlite" and database and database != ":memory:":
            with contextlib.closing(sqlite3.connect(database)) as conn:  # outside any transaction
                conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")

    def _insert(self, table: sa.Table) -> Any:
        name = self.dialect
        if name == "postgresql":
            return postgresql.insert(table)
        if name == "sqlite":
            return sqlite.insert(table)
        return mysql.insert(table)

    def _ordered(self, column: sa.ColumnElement[Any]) -> sa.ColumnElement[Any]:
        """Order by code point everywhere (PostgreSQL's default collation is linguistic)."""
        return column.collate("C") if self.dialect == "postgresql" else column

    # --- sessions ---------------------------------------------------------------------

    def _lock_session(self, conn: Connection, session_id: str) -> sa.Row[Any, Any, Any]:
        """Create the session row if needed (upsert; a deleted session's version goes on) and lock it."""
        check_key(session_id)
        now = _now()
        ins = self._insert(sessions).values(
            session_id=session_id,
            summary=None,
            next_seq=0,
            version=sa.func.coalesce(_deleted_version(session_id), 0),
            created_at=now,
            updated_at=now,
        )
        if self.dialect in _MYSQL:
            conn.execute(ins.on_duplicate_key_update(session_id=ins.inserted.session_id))
        else:
            conn.execute(ins.on_conflict_do_nothing(index_elements=[sessions.c.session_id]))
        c = sessions.c
        query = sa.select(c.next_seq, c.summary, c.version).where(c.session_id == session_id)
        return conn.execute(query.with_for_update()).one()

    def _entries_of(self, session_id: str) -> sa.Select[Any]:
        c = session_entries.c
        return sa.select(c.seq, c.body).where(c.session_id == session_id).order_by(c.seq)

    def load(self, session_id: str) -> SessionState:
        def read(conn: Connection) -> SessionState:
            c = sessions.c
            head = conn.execute(sa.select(c.summary, c.version).where(c.session_id == session_id)).first()
            if head is None:
                return SessionState(version=conn.execute(sa.select(_version_of(session_id))).scalar_one())
            rows = conn.execute(self._entries_of(session_id)).all()
            return SessionState(tuple(decode(r.body) for r in rows), head.summary, head.version)

        return self._read(read)

    def append(self, session_id: str, entries: Sequence[Entry]) -> int:
        bodies = [encode(e) for e in entries]

        def write(conn: Connection) -> int:
            head = self._lock_session(conn, session_id)
            return self._insert_entries(conn, session_id, head, bodies, head.summary)

        return self._write(write)

    def _insert_entries(
        self, conn: Connection, session_id: str, head: sa.Row[Any, Any, Any], bodies: Sequence[str], summary: str | None
    ) -> int:
        """Append `bodies` after the locked session `head`, set its summary, count the change; the new version."""
        seq = head.next_seq
        if bodies:
            rows = [{"session_id": session_id, "seq": seq + i, "body": b} for i, b in enumerate(bodies)]
            conn.execute(session_entries.insert(), rows)
        values = {"summary": summary, "next_seq": seq + len(bodies), "version": head.version + 1, "updated_at": _now()}
        conn.execute(sessions.update().where(sessions.c.session_id == session_id).values(**values))
        return int(head.version) + 1

    def update(self, session_id: str, fn: Update) -> SessionState:
        def write(conn: Connection) -> SessionState:
            head = self._lock_session(conn, session_id)
            rows = conn.execute(self._entries_of(session_id)).all()
            old, rewrite = plan_update(fn, [r.body for r in rows], head.summary)
            if rewrite is None:
                return replace(old, version=head.version)
            if rewrite.drop:
                cutoff = rows[rewrite.drop].seq if rewrite.drop < len(rows) else head.next_seq
                c = session_entries.c
                conn.execute(sa.delete(session_entries).where(c.session_id == session_id, c.seq < cutoff))
            version = self._insert_entries(conn, session_id, head, rewrite.add, rewrite.summary)
            return replace(rewrite.state, version=version)

        return self._write(write)

    def exists(self, session_id: str) -> bool:
        query = sa.select(sessions.c.session_id).where(sessions.c.session_id == session_id)
        return self._read(lambda c: c.execute(query).first() is not None)

    def count(self, session_id: str) -> int:
        query = (
            sa.select(sa.func.count()).select_from(session_entries).where(session_entries.c.session_id == session_id)
        )
        return int(self._read(lambda c: c.execute(query).scalar_one()))

    def version(self, session_id: str) -> int:
        query = sa.select(_version_of(session_id))
        return int(self._read(lambda c: c.execute(query).scalar_one()))

    def sessions(self) -> list[str]:
        query = sa.select(sessions.c.session_id).order_by(self._ordered(sessions.c.session_id))
        return list(self._read(lambda c: c.execute(query).scalars().all()))

    def delete_session(self, session_id: str) -> None:
        def write(conn: Connection) -> None:
            live = sa.select(sessions.c.version).where(sessions.c.session_id == session_id).with_for_update()
            version = conn.execute(live).scalar()
            if version is None:
                version = conn.execute(sa.select(_version_of(session_id))).scalar_one()
            conn.execute(sa.delete(session_entries).where(session_entries.c.session_id == session_id))
            conn.execute(sa.delete(sessions).where(sessions.c.session_id == session_id))
            ins = self._insert(deleted_versions).values(session_id=session_id, version=version + 1)
            if self.dialect in _MYSQL:
                conn.execute(ins.on_duplicate_key_update(version=ins.inserted.version))
            else:
                conn.execute(
                    ins.on_conflict_do_update(
                        index_elements=[deleted_versions.c.session_id], set_={"version": ins.excluded.version}
                    )
                )

        self._write(write)

    # --- long-term memory rows -------------------------------------------------------

    def _in(
        self, namespace: Sequence[str] | str, ids: Sequence[str], archived: bool | None = None
    ) -> sa.ColumnElement[bool]:
        """The rows among `ids` of the namespace (only the archived or only the active ones, if `archived` says).

        The state is tested with ``IS NOT``, which no index serves: with ``archived = ?`` and three or more
        ids, SQLite's planner takes the (namespace, archived, seq) index and reads every active row of the
        namespace (3 ms at 20,000 memories) instead of the primary key's few.
        """
        ns = namespace if isinstance(namespace, str) else ns_text(namespace)
        found = sa.and_(memories.c.namespace == ns, memories.c.id.in_(list(dict.fromkeys(ids))))
        return found if archived is None else sa.and_(found, memories.c.archived.is_not(not archived))

    def add_memories(self, rows: Sequence[MemoryRow]) -> int:
        if not rows:
            return 0
        c = memories.c

        def write(conn: Connection) -> tuple[int, list[tuple[str, int, int]]]:
            added, counted = 0, []
            for ns, group in _by_namespace(rows).items():
                ids = [row.id for row in group]
                present = set(conn.execute(sa.select(c.id).where(self._in(ns, ids))).scalars())
                new = [row for row in dict((row.id, row) for row in group).values() if row.id not in present]
                if not new:
                    continue
                # Ties in seq (two writers of one namespace at once) are broken by id when listing.
                seq = max((s or 0) for s in conn.execute(_last_seq(ns)).one())
                ins = self._insert(memories).values([_memory_values(ns, seq + i + 1, row) for i, row in enumerate(new)])
                if self.dialect in _MYSQL:  # a concurrent writer of the same id: keep the stored row
                    conn.execute(ins.on_duplicate_key_update(id=ins.inserted.id))
                else:
                    conn.execute(ins.on_conflict_do_nothing(index_elements=[c.namespace, c.id]))
                added += len(new)
                counted.append((ns, *self._count_write(conn, ns)))
            return added, counted

        added, counted = self._write(write)
        for ns, old, new in counted:  # after the commit: a retried transaction counts once
            self._held.wrote(ns, old, new)
        return added

    def _count_write(self, conn: Connection, ns: str) -> tuple[int, int]:
        """Raise namespace `ns`'s version in this transaction (an upsert: two first writes cannot clash); (old, new)."""
        c = namespace_versions.c
        ins = self._insert(namespace_versions).values(namespace=ns, version=1)
        if self.dialect in _MYSQL:
            conn.execute(ins.on_duplicate_key_update(version=c.version + 1))
        else:
            conn.execute(ins.on_conflict_do_update(index_elements=[c.namespace], set_={"version": c.version + 1}))
        new = _namespace_version(conn, ns)
        return new - 1, new

    @contextlib.contextmanager
    def exclusive(self, namespace: Sequence[str]) -> Iterator[SaveBlock]:
        """The namespace's save lock (see `MemoryRows.exclusive`), held against every process on the database.

        PostgreSQL and MySQL/MariaDB: a named lock on a connection of its own (``pg_advisory_lock``,
        ``GET_LOCK``; released by the server if the process dies), while the block's statements run
        and are retried as usual. SQLite has no such lock: the block runs in one ``BEGIN IMMEDIATE``
        transaction (the database's write lock) that every statement of this thread joins, so the
        block commits whole or not at all.
        """
        ns = ns_text(namespace)
        self._held.refuse_reentry(ns)
        if self.dialect == "sqlite":
            with self._sqlite_exclusive() as conn, self._held.holding(ns, _namespace_version(conn, ns)) as block:
                yield block
            return
        acquire, release, key = self._named_lock(ns)
        with self.engine.connect() as conn:
            conn.execution_options(isolation_level="AUTOCOMMIT")  # the lock outlives statements: no BEGIN/COMMIT
            try:
                got = conn.execute(sa.text(acquire), {"key": key}).scalar()
                if self.dialect in _MYSQL and got != 1:  # GET_LOCK: 1 taken, 0 timed out (PostgreSQL waits)
                    raise MemlabError(
                        f"longterm: another process held the save lock of namespace {ns} for {LOCK_WAIT_SECONDS} s"
                    )
                with self._held.holding(ns, _namespace_version(conn, ns)) as block:
                    yield block
            finally:  # after a failed acquire too: releasing a lock not held changes nothing
                try:
                    conn.execute(sa.text(release), {"key": key})
                except sa.exc.DBAPIError:
                    conn.invalidate()  # closing the session frees its locks on the server

    @contextlib.contextmanager
    def _sqlite_exclusive(self) -> Iterator[Connection]:
        if getattr(self._joined, "conn", None) is not None:  # one transaction per thread: another namespace's block
            raise RuntimeError("SqlStore.exclusive: a SQLite save lock is held by this thread already")
        for attempt in range(MAX_RETRIES + 1):
            with self.engine.connect() as conn:
                try:
                    transaction = conn.begin()  # BEGIN IMMEDIATE: waits for the write lock (busy timeout)
                except sa.exc.DBAPIError as e:
                    self._retry_or_raise(e, attempt)
                    continue
                self._joined.conn = conn
                try:
                    with transaction:
                        yield conn
                finally:
                    self._joined.conn = None
                return

    def _named_lock(self, ns: str) -> tuple[str, str, int | str]:
        """The statements that take and release namespace `ns`'s save lock, and the lock's key."""
        digest = hashlib.sha256(f"memlab.longterm\0{self.url.database}\0{self.schema}\0{ns}".encode()).digest()
        if self.dialect == "postgresql":
            key = int.from_bytes(digest[:8], "big", signed=True)
            return "SELECT pg_advisory_lock(:key)", "SELECT pg_advisory_unlock(:key)", key
        # a MySQL lock name is server-wide and at most 64 characters
        name = f"memlab.longterm.{digest.hex()[:40]}"
        return f"SELECT GET_LOCK(:key, {LOCK_WAIT_SECONDS})", "SELECT RELEASE_LOCK(:key)", name

    def _listed(self, namespace: Sequence[str], archived: bool | None) -> sa.ColumnElement[bool]:
        where = memories.c.namespace == ns_text(namespace)
        return where if archived is None else sa.and_(where, memories.c.archived == archived)

    def list_memories(self, namespace: Sequence[str], *, archived: bool | None = False) -> list[MemoryRow]:
        c = memories.c
        query = sa.select(memories).where(self._listed(namespace, archived)).order_by(c.seq, self._ordered(c.id))
        return [_memory_row(r) for r in self._read(lambda conn: conn.execute(query).all())]

    def memory_version(self, namespace: Sequence[str]) -> int:
        ns = ns_text(namespace)
        return self._read(lambda conn: _namespace_version(conn, ns))

    def count_memories(self, namespace: Sequence[str], *, archived: bool | None = False) -> int:
        query = sa.select(sa.func.count()).select_from(memories).where(self._listed(namespace, archived))
        return int(self._read(lambda conn: conn.execute(query).scalar_one()))

    def touch_memories(
        self, namespace: Sequence[str], ids: Sequence[str], now: datetime, rescore: Rescore
    ) -> list[MemoryRow]:
        if not ids:
            return []
        c, t = memories.c, naive(now)
        active = self._in(namespace, ids, archived=False)

        def write(conn: Connection) -> list[MemoryRow]:
            stored = [_memory_row(r) for r in conn.execute(sa.select(memories).where(active).with_for_update())]
            for row in stored:
                stmt = (
                    sa.update(memories)
                    .where(c.namespace == ns_text(row.namespace), c.id == row.id, c.archived == sa.false())
                    .values(
                        access_count=c.access_count + 1,
                        relevance_score=float(rescore(row)),
                        last_accessed_at=max(t, row.last_accessed_at),
                    )
                )
                conn.execute(stmt)
            order = {key: i for i, key in enumerate(ids)}
            after = [_memory_row(r) for r in conn.execute(sa.select(memories).where(active))]
            return sorted(after, key=lambda r: order[r.id])

        return self._write(write)

    def archive_memories(self, namespace: Sequence[str], ids: Sequence[str]) -> int:
        if not ids:
            return 0
        stmt = sa.update(memories).where(self._in(namespace, ids, archived=False)).values(archived=True)
        return self._change_active(namespace, stmt)

    def restore_memories(self, namespace: Sequence[str], ids: Sequence[str], now: datetime) -> int:
        if not ids:
            return 0
        stmt = (
            sa.update(memories)
            .where(self._in(namespace, ids, archived=True))
            .values(archived=False, relevance_score=1.0, last_accessed_at=naive(now))
        )
        return self._change_active(namespace, stmt)

    def _change_active(self, namespace: Sequence[str], stmt: sa.Executable) -> int:
        """Run `stmt` (an archive, restore or delete) and, if it changed rows, count the write in the same
        transaction; returns how many rows changed."""
        ns = ns_text(namespace)

        def write(conn: Connection) -> tuple[int, tuple[int, int] | None]:
            changed = int(conn.execute(stmt).rowcount or 0)
            return changed, self._count_write(conn, ns) if changed else None

        changed, counted = self._write(write)
        if counted is not None:
            self._held.wrote(ns, *counted)
        return changed

    def memory_namespaces(self, within: Sequence[str] = ()) -> list[tuple[str, ...]]:
        head, c = tuple(within), memories.c
        query = sa.select(c.namespace).distinct()
        if head:  # the namespace itself, or one whose JSON array continues it
            text = ns_text(head)
            query = query.where(sa.or_(c.namespace == text, c.namespace.startswith(text[:-1] + ",", autoescape=True)))
        found = {tuple(json.loads(ns)) for ns in self._read(lambda conn: conn.execute(query).scalars().all())}
        return sorted(ns for ns in found if ns[: len(head)] == head)  # exact: SQLite's LIKE ignores ASCII case

    def delete_memories(self, namespace: Sequence[str]) -> int:
        return self._change_active(namespace, sa.delete(memories).where(memories.c.namespace == ns_text(namespace)))


def _last_seq(ns: str) -> sa.Select[Any]:
    """The namespace's highest seq among its active rows and among its archived ones (NULL: none): two
    lookups at the end of the (namespace, archived, seq) index. ``max(seq) WHERE namespace = ?`` reads every
    row of the namespace on SQLite and PostgreSQL (6 and 25 ms at 20,000 memories)."""
    c = memories.c
    last = [
        sa.select(sa.func.max(c.seq)).where(c.namespace == ns, c.archived == flag).scalar_subquery()
        for flag in (False, True)
    ]
    return sa.select(*last)


def _deleted_version(session_id: str) -> sa.ScalarSelect[Any]:
    """The version a deleted session had reached (NULL if it was never deleted)."""
    c = deleted_versions.c
    return sa.select(c.version).where(c.session_id == session_id).scalar_subquery()


def _version_of(session_id: str) -> sa.ColumnElement[Any]:
    """`SessionStore.version`: the live session's, else the deleted one's, else 0."""
    live = sa.select(sessions.c.version).where(sessions.c.session_id == session_id).scalar_subquery()
    return sa.func.coalesce(live, _deleted_version(session_id), 0)


def _namespace_version(conn: Connection, ns: str) -> int:
    c = namespace_versions.c
    return int(conn.execute(sa.select(c.version).where(c.namespace == ns)).scalar() or 0)


def _by_namespace(rows: Sequence[MemoryRow]) -> dict[str, list[MemoryRow]]:
    grouped: dict[str, list[MemoryRow]] = {}
    for row in rows:
        grouped.setdefault(ns_text(row.namespace), []).append(row)
    return grouped


def _memory_values(ns: str, seq: int, row: MemoryRow) -> dict[str, Any]:
    return {
        "namespace": ns,
        "id": check_key(row.id),
        "seq": seq,
        "value_json": encode_value(row.value),
        "type": row.type,
        "source": row.source,
        "created_at": naive(row.created_at),
        "last_accessed_at": naive(row.last_accessed_at),
        "access_count": row.access_count,
        "relevance_score": float(row.relevance_score),
        "archived": row.archived,
    }


def _memory_row(row: sa.Row[Any]) -> MemoryRow:
    m = row._mapping
    return MemoryRow(
        namespace=tuple(json.loads(m["namespace"])),
        id=m["id"],
        value=json.loads(m["value_json"]),
        type=m["type"],
        source=m["source"],
        created_at=m["created_at"],
        last_accessed_at=m["last_accessed_at"],
        access_count=int(m["access_count"]),
        relevance_score=float(m["relevance_score"]),
        archived=bool(m["archived"]),
    )


def _read_options(dialect: str) -> dict[str, Any]:
    """A consistent snapshot for multi-statement reads (SQLite: a deferred transaction in WAL)."""
    return {"memlab_sqlite_begin": "DEFERRED"} if dialect == "sqlite" else {"isolation_level": "REPEATABLE READ"}


def _sqlite_connect(dbapi_connection: Any, _record: Any) -> None:
    dbapi_connection.isolation_level = None  # memlab issues BEGIN itself (see _sqlite_begin)
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.close()


def _sqlite_begin(conn: Connection) -> None:
    # IMMEDIATE takes the write lock up front, so a read-modify-write cannot interleave with another.
    conn.exec_driver_sql(f"BEGIN {conn.get_execution_options().get('memlab_sqlite_begin', 'IMMEDIATE')}")


def _transient(e: sa.exc.DBAPIError) -> bool:
    """Deadlocks, serialization failures, lock timeouts and busy databases: worth retrying."""
    orig = e.orig
    sqlstate = getattr(orig, "sqlstate", None)
    if sqlstate in ("40001", "40P01", "55P03"):
        return True
    code = orig.args[0] if orig is not None and orig.args else None
    if code in (1205, 1213):
        return True
    return "database is locked" in str(orig) or "database is busy" in str(orig)
