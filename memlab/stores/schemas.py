"""Structured configs of the `store` group (validated by Hydra at start)."""

from __future__ import annotations

from dataclasses import dataclass

from memlab import ranges


@dataclass
class InMemoryStoreConfig:
    """`store=memory`: Python dicts, gone when the run ends (the default)."""

    _target_: str = "memlab.stores.InMemoryStore"


@dataclass
class SqliteStoreConfig:
    """`store=sqlite`: an embedded SQLite file in WAL mode; a relative `path` lands in the run directory."""

    _target_: str = "memlab.stores.SqlStore"
    path: str = "memlab.sqlite"
    """The database file; a relative path lands in the run directory."""
    run_dir: str | None = "${output_dir}"
    """Where a relative `path` lands (the run's output directory)."""
    pool_size: int = ranges.ranged(10, ge=1, le=1_000)
    """Connections kept open."""


@dataclass
class PostgresStoreConfig:
    """`store=postgres`: PostgreSQL by URL (psycopg 3), optionally in its own `schema`."""

    _target_: str = "memlab.stores.SqlStore"
    url: str = "postgresql+psycopg://postgres@127.0.0.1:5432/test"
    """SQLAlchemy URL of the database."""
    schema: str | None = None
    """A PostgreSQL schema of its own (null: the default one)."""
    pool_size: int = ranges.ranged(10, ge=1, le=1_000)
    """Connections kept open."""


@dataclass
class MysqlStoreConfig:
    """`store=mysql`: MySQL or MariaDB by URL (PyMySQL)."""

    _target_: str = "memlab.stores.SqlStore"
    url: str = "mysql+pymysql://root@127.0.0.1:3306/test"
    """SQLAlchemy URL of the database."""
    pool_size: int = ranges.ranged(10, ge=1, le=1_000)
    """Connections kept open."""


@dataclass
class RedisStoreConfig:
    """`store=redis`: session memory in Redis under a key prefix."""

    _target_: str = "memlab.stores.RedisStore"
    url: str = "redis://127.0.0.1:6379/0"
    """Redis URL."""
    prefix: str = "memlab:"
    """Every key starts with this."""


SCHEMAS = {
    ("store", "memory"): InMemoryStoreConfig,
    ("store", "sqlite"): SqliteStoreConfig,
    ("store", "postgres"): PostgresStoreConfig,
    ("store", "mysql"): MysqlStoreConfig,
    ("store", "redis"): RedisStoreConfig,
}
