"""Where memories persist: in memory, SQL (SQLite, PostgreSQL, MySQL/MariaDB) and Redis.

Every backend is a `SessionStore` (ordered entries plus a summary per session, with an atomic
read-modify-write); the in-memory and SQL ones also keep long-term memory rows (`MemoryRows`),
so `store=` moves long-term memory too. Each is a `store=` entry in `conf/store/`.
"""

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from memlab import ranges
from memlab.stores.base import Entry, SessionState, SessionStore, decode, encode, plan_rewrite
from memlab.stores.memories import MAX_KEY_LENGTH, MemoryRow, MemoryRows, ns_text
from memlab.stores.memory import InMemoryStore
from memlab.stores.redis_store import RedisStore

if TYPE_CHECKING:
    from memlab.stores.sql import LATEST_VERSION, MIGRATIONS, SqlStore

_SQL_NAMES = ("LATEST_VERSION", "MIGRATIONS", "SqlStore")


def __getattr__(name: str) -> Any:
    """The SQL names, imported on first use: sqlalchemy takes most of a second to import."""
    if name in _SQL_NAMES:
        from memlab.stores import sql

        return getattr(sql, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@dataclass
class InMemoryStoreConfig:
    """`store=memory`: Python dicts, gone when the run ends (the default)."""

    _target_: str = "memlab.stores.InMemoryStore"


@dataclass
class SqliteStoreConfig:
    """`store=sqlite`: an embedded SQLite file in WAL mode; a relative `path` lands in the run directory."""

    _target_: str = "memlab.stores.SqlStore"
    path: str = "memlab.sqlite"
    run_dir: str | None = "${output_dir}"
    pool_size: int = ranges.ranged(10, ge=1, le=1_000)


@dataclass
class PostgresStoreConfig:
    """`store=postgres`: PostgreSQL by URL (psycopg 3), optionally in its own `schema`."""

    _target_: str = "memlab.stores.SqlStore"
    url: str = "postgresql+psycopg://postgres@127.0.0.1:5432/test"
    schema: str | None = None
    pool_size: int = ranges.ranged(10, ge=1, le=1_000)


@dataclass
class MysqlStoreConfig:
    """`store=mysql`: MySQL or MariaDB by URL (PyMySQL)."""

    _target_: str = "memlab.stores.SqlStore"
    url: str = "mysql+pymysql://root@127.0.0.1:3306/test"
    pool_size: int = ranges.ranged(10, ge=1, le=1_000)


@dataclass
class RedisStoreConfig:
    """`store=redis`: session memory in Redis under a key prefix."""

    _target_: str = "memlab.stores.RedisStore"
    url: str = "redis://127.0.0.1:6379/0"
    prefix: str = "memlab:"


SCHEMAS = {
    ("store", "memory"): InMemoryStoreConfig,
    ("store", "sqlite"): SqliteStoreConfig,
    ("store", "postgres"): PostgresStoreConfig,
    ("store", "mysql"): MysqlStoreConfig,
    ("store", "redis"): RedisStoreConfig,
}

__all__ = [
    "LATEST_VERSION",
    "MAX_KEY_LENGTH",
    "MIGRATIONS",
    "SCHEMAS",
    "Entry",
    "InMemoryStore",
    "MemoryRow",
    "MemoryRows",
    "RedisStore",
    "SessionState",
    "SessionStore",
    "SqlStore",
    "decode",
    "encode",
    "ns_text",
    "plan_rewrite",
]
