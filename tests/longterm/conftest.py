"""Fixtures for long-term memory: a store on each real database (through `memlab.stores`), and services."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator

import pytest
import sqlalchemy as sa

from memlab.longterm import MemoryStore
from memlab.stores import SqlStore

POSTGRES = "postgresql+psycopg://postgres@127.0.0.1:5432/test"
MARIADB = "mysql+pymysql://root@127.0.0.1:3306/test"


def _unreachable(service: str, error: Exception) -> None:
    if os.environ.get("MEMLAB_REQUIRE_SERVICES") == "1":
        raise error
    pytest.skip(f"{service} unreachable ({type(error).__name__})")


def _postgres() -> Iterator[SqlStore]:
    schema = f"memlab_lt_{uuid.uuid4().hex[:10]}"
    admin = sa.create_engine(POSTGRES)
    try:
        with admin.begin() as conn:
            conn.execute(sa.text(f'CREATE SCHEMA "{schema}"'))
    except sa.exc.OperationalError as e:
        _unreachable("PostgreSQL", e)
    store = SqlStore(url=POSTGRES, schema=schema)
    try:
        yield store
    finally:
        store.close()
        with admin.begin() as conn:
            conn.execute(sa.text(f'DROP SCHEMA "{schema}" CASCADE'))
        admin.dispose()


def _mariadb() -> Iterator[SqlStore]:
    database = f"memlab_lt_{uuid.uuid4().hex[:10]}"
    admin = sa.create_engine(MARIADB)
    try:
        with admin.begin() as conn:
            conn.execute(sa.text(f"CREATE DATABASE `{database}`"))
    except sa.exc.OperationalError as e:
        _unreachable("MariaDB", e)
    store = SqlStore(url=MARIADB.rsplit("/", 1)[0] + f"/{database}")
    try:
        yield store
    finally:
        store.close()
        with admin.begin() as conn:
            conn.execute(sa.text(f"DROP DATABASE `{database}`"))
        admin.dispose()


@pytest.fixture(
    params=[
        "sqlite",
        pytest.param("postgresql", marks=pytest.mark.services),
        pytest.param("mariadb", marks=pytest.mark.services),
    ]
)
def store(request, tmp_path) -> Iterator[MemoryStore]:
    """A fresh `MemoryStore` on SQLite (a file), PostgreSQL (own schema) and MariaDB (own database)."""
    if request.param == "sqlite":
        sql = SqlStore(path=str(tmp_path / "longterm.db"))
        yield MemoryStore(sql)
        sql.close()
        return
    make = _postgres if request.param == "postgresql" else _mariadb
    stores = make()
    try:
        yield MemoryStore(next(stores))
    finally:
        stores.close()


@pytest.fixture(scope="session")
def embedder():
    from memlab.embed import HashingEmbedder

    return HashingEmbedder()


@pytest.fixture
def make_service(embedder):
    """A service on a fresh in-memory SQLite store, long-term memory on for agents `chat` and `support`."""
    from memlab.llm import ExtractiveChatModel
    from memlab.longterm import IndexSpec, LongTermMemoryService, LongTermSettings

    def _make(index: str = "exact", store=None, **kwargs):
        return LongTermMemoryService(
            store if store is not None else MemoryStore(),
            embedder,
            ExtractiveChatModel(),
            defaults=LongTermSettings(enabled=True, memory_tools=True),
            agents=kwargs.pop("agents", {"chat": {"namespace": "chat"}, "support": {"namespace": "support"}}),
            index=IndexSpec(kind=index),
            **kwargs,
        )

    return _make
