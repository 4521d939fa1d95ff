"""Backends for the store tests, each isolated: a SQLite file, a PostgreSQL schema, a MariaDB
database and a Redis key prefix of its own per test, removed afterwards.

An unreachable service skips its tests with a message naming it, unless MEMLAB_REQUIRE_SERVICES=1
(CI), where it fails them.
"""

from __future__ import annotations

import contextlib
import os
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from sql_servers import MARIADB, POSTGRES

from memlab.stores import InMemoryStore, RedisStore, SqlStore

POSTGRES_URL = os.environ.get("MEMLAB_TEST_POSTGRES_URL", POSTGRES)
MYSQL_URL = os.environ.get("MEMLAB_TEST_MYSQL_URL", MARIADB)
REDIS_URL = os.environ.get("MEMLAB_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")

ENTRY_BACKENDS = {"mysql": "mariadb"}  # conf/store entries whose backend has another name here


@dataclass
class Backend:
    """One isolated database; `make()` opens a new store object on it (another process would do the same)."""

    name: str
    make: Callable[[], Any]
    overrides: tuple[str, ...] = ()  # the `memlab run` overrides that select this database
    opened: list[Any] = field(default_factory=list)

    def open(self) -> Any:
        store = self.make()
        self.opened.append(store)
        return store


def _unreachable(service: str, where: str, error: Exception) -> None:
    message = f"{service} is unreachable at {where} ({type(error).__name__}: {error})"
    if os.environ.get("MEMLAB_REQUIRE_SERVICES") == "1":
        pytest.fail(message + "; MEMLAB_REQUIRE_SERVICES=1 requires it")
    pytest.skip(message + "; set MEMLAB_REQUIRE_SERVICES=1 to fail instead")


def _admin(url: str, service: str) -> sa.Engine:
    engine = sa.create_engine(url, poolclass=sa.pool.NullPool)
    try:
        with engine.connect():
            pass
    except sa.exc.OperationalError as e:
        _unreachable(service, engine.url.render_as_string(hide_password=True), e)
    return engine


@contextlib.contextmanager
def _dropping(admin: sa.Engine, drop: str) -> Iterator[None]:
    """Runs `drop` (SQL) on `admin` when the block ends, however it ends, then disposes of `admin`."""
    try:
        yield
    finally:
        with admin.begin() as conn:
            conn.exec_driver_sql(drop)
        admin.dispose()


@contextlib.contextmanager
def _memory(tag: str, tmp_path: Path, url: str | None) -> Iterator[Backend]:
    shared = InMemoryStore()  # one process: every "new store object" is the same store
    yield Backend("memory", lambda: shared, ("store=memory",))


@contextlib.contextmanager
def _sqlite(tag: str, tmp_path: Path, url: str | None) -> Iterator[Backend]:
    path = tmp_path / f"{tag}.sqlite"
    yield Backend("sqlite", lambda: SqlStore(path=str(path)), ("store=sqlite", f"store.path='{path}'"))


@contextlib.contextmanager
def _postgres(tag: str, tmp_path: Path, url: str | None) -> Iterator[Backend]:
    pg = url or POSTGRES_URL
    admin = _admin(pg, "PostgreSQL")
    with _dropping(admin, f'DROP SCHEMA IF EXISTS "{tag}" CASCADE'):
        overrides = ("store=postgres", f"store.url='{pg}'", f"store.schema={tag}")
        yield Backend("postgres", lambda: SqlStore(url=pg, schema=tag), overrides)


@contextlib.contextmanager
def _mariadb(tag: str, tmp_path: Path, url: str | None) -> Iterator[Backend]:
    admin = _admin(url or MYSQL_URL, "MariaDB/MySQL")
    with admin.begin() as conn:
        conn.exec_driver_sql(f"CREATE DATABASE `{tag}` CHARACTER SET utf8mb4")
    db = sa.engine.make_url(url or MYSQL_URL).set(database=tag).render_as_string(hide_password=False)
    with _dropping(admin, f"DROP DATABASE IF EXISTS `{tag}`"):
        yield Backend("mariadb", lambda: SqlStore(url=db), ("store=mysql", f"store.url='{db}'"))


@contextlib.contextmanager
def _redis(tag: str, tmp_path: Path, url: str | None) -> Iterator[Backend]:
    import redis

    where = url or REDIS_URL
    client = redis.Redis.from_url(where)
    try:
        client.ping()
    except redis.exceptions.ConnectionError as e:
        _unreachable("Redis", where, e)
    try:
        overrides = ("store=redis", f"store.url='{where}'", f"store.prefix='{tag}:'")
        yield Backend("redis", lambda: RedisStore(url=where, prefix=f"{tag}:"), overrides)
    finally:
        keys = list(client.scan_iter(match=f"{tag}:*"))
        if keys:
            client.delete(*keys)
        client.close()


# How each backend gets a database of its own: (tag, tmp_path, url) -> the Backend, removed on exit.
ISOLATORS: dict[str, Callable[[str, Path, str | None], contextlib.AbstractContextManager[Backend]]] = {
    "memory": _memory,
    "sqlite": _sqlite,
    "postgres": _postgres,
    "mariadb": _mariadb,
    "redis": _redis,
}


@contextlib.contextmanager
def isolated(name: str, tmp_path: Path, url: str | None = None) -> Iterator[Backend]:
    """A fresh, empty database for backend `name` (or conf/store entry; at `url`, else the default), dropped on exit.

    The stores opened on it are closed before it is dropped.
    """
    isolator = ISOLATORS.get(ENTRY_BACKENDS.get(name, name))
    if isolator is None:
        raise KeyError(f"store {name!r} has no isolated database: add one to ISOLATORS in tests/stores/conftest.py")
    with isolator(f"memlab_test_{uuid.uuid4().hex[:12]}", tmp_path, url) as backend:
        try:
            yield backend
        finally:
            _close(backend)


ALL_BACKENDS = tuple(ISOLATORS)
SQL_BACKENDS = ("sqlite", "postgres", "mariadb")
KV_BACKENDS = ("memory", *SQL_BACKENDS)
SHARED_BACKENDS = (*SQL_BACKENDS, "redis")  # reachable from several processes


def _close(backend: Backend) -> None:
    for store in backend.opened:
        store.close()


@pytest.fixture(params=ALL_BACKENDS)
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Backend]:
    with isolated(request.param, tmp_path) as b:
        yield b


@pytest.fixture(params=KV_BACKENDS)
def kv_backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Backend]:
    with isolated(request.param, tmp_path) as b:
        yield b


@pytest.fixture(params=SQL_BACKENDS)
def sql_backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Backend]:
    with isolated(request.param, tmp_path) as b:
        yield b


@pytest.fixture(params=SHARED_BACKENDS)
def shared_backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Backend]:
    with isolated(request.param, tmp_path) as b:
        yield b


@pytest.fixture
def isolate() -> Callable[..., Any]:
    """`isolated` itself, for tests of how an unreachable service is reported."""
    return isolated
