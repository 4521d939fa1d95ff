"""Fixtures for long-term memory: a store on each real database (through `memlab.stores`), and services."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from sql_servers import mariadb_store, postgres_store

from memlab.longterm import MemoryStore
from memlab.stores import SqlStore


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
    make = postgres_store if request.param == "postgresql" else mariadb_store
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
