"""A fresh `SqlStore` on the real PostgreSQL (own schema) or MariaDB (own database), dropped afterwards.

Shared by tests/longterm's `store` fixture and the long-term scale benchmark (on the pythonpath: pyproject's
`pythonpath`). An unreachable server skips the test, or fails it under MEMLAB_REQUIRE_SERVICES=1.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator

import pytest
import sqlalchemy as sa

from memlab.stores import SqlStore

POSTGRES = "postgresql+psycopg://postgres@127.0.0.1:5432/test"
# ssl_disabled: PyMySQL 1.2 otherwise builds a TLS context (the system's CA certificates, ~29 ms CPU) on every
# connection to try TLS, which the local server here does not offer; the suite opens some hundreds of connections.
MARIADB = "mysql+pymysql://root@127.0.0.1:3306/test?ssl_disabled=true"


def _unreachable(service: str, error: Exception) -> None:
    if os.environ.get("MEMLAB_REQUIRE_SERVICES") == "1":
        raise error
    pytest.skip(f"{service} unreachable ({type(error).__name__})")


def _scratch(service: str, admin_url: str, create: str, drop: str, **store: str) -> Iterator[SqlStore]:
    """Run `create` on the server, yield a store in what it made, close it and run `drop`."""
    admin = sa.create_engine(admin_url)
    try:
        with admin.begin() as conn:
            conn.execute(sa.text(create))
    except sa.exc.OperationalError as e:
        _unreachable(service, e)
    made = SqlStore(**store)
    try:
        yield made
    finally:
        made.close()
        with admin.begin() as conn:
            conn.execute(sa.text(drop))
        admin.dispose()


def postgres_store(prefix: str = "memlab_lt") -> Iterator[SqlStore]:
    """A store in a new PostgreSQL schema named `prefix` and a random suffix, dropped when the generator closes."""
    schema = f"{prefix}_{uuid.uuid4().hex[:10]}"
    create, drop = f'CREATE SCHEMA "{schema}"', f'DROP SCHEMA "{schema}" CASCADE'
    return _scratch("PostgreSQL", POSTGRES, create, drop, url=POSTGRES, schema=schema)


def mariadb_store(prefix: str = "memlab_lt") -> Iterator[SqlStore]:
    """A store in a new MariaDB database named `prefix` and a random suffix, dropped when the generator closes."""
    database = f"{prefix}_{uuid.uuid4().hex[:10]}"
    create, drop = f"CREATE DATABASE `{database}`", f"DROP DATABASE `{database}`"
    url = sa.engine.make_url(MARIADB).set(database=database).render_as_string()
    return _scratch("MariaDB", MARIADB, create, drop, url=url)
