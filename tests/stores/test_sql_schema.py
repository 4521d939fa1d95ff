"""The SQL schema: created and migrated by memlab (versioned, idempotent, safe to race), VARCHAR(255)
keys, upserts written per dialect; and the SQLite store's file and WAL mode."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
import sqlalchemy as sa
from sqlalchemy import event

from memlab.errors import MemlabError
from memlab.stores import LATEST_VERSION, MIGRATIONS, MemoryRow, SqlStore

T0 = datetime(2024, 1, 1)

if TYPE_CHECKING:
    from tests.stores.conftest import Backend

TABLES = (
    "memlab_schema_version",
    "memlab_sessions",
    "memlab_session_entries",
    "ah_long_term_memory",
    "memlab_session_versions",
    "memlab_namespace_versions",
)


def _inspect(store: SqlStore) -> Any:
    """Look at the database from outside the store (its own engine would migrate first)."""
    return sa.inspect(sa.create_engine(store.url, poolclass=sa.pool.NullPool))


def _columns(store: SqlStore, table: str) -> dict[str, Any]:
    return {c["name"]: c["type"] for c in _inspect(store).get_columns(table, schema=store.schema)}


def test_schema_is_created_with_varchar_keys(sql_backend: Backend) -> None:
    store = sql_backend.open()
    assert store.schema_version() == LATEST_VERSION == MIGRATIONS[-1].version
    assert set(TABLES) <= set(_inspect(store).get_table_names(schema=store.schema))
    for table, keys in [
        ("memlab_sessions", ["session_id"]),
        ("memlab_session_entries", ["session_id"]),
        ("ah_long_term_memory", ["namespace", "id"]),
        ("memlab_session_versions", ["session_id"]),
        ("memlab_namespace_versions", ["namespace"]),
    ]:
        columns = _columns(store, table)
        for key in keys:
            assert isinstance(columns[key], sa.String) and not isinstance(columns[key], sa.Text), (table, key)
            assert columns[key].length == 255, (table, key)
        pk = _inspect(store).get_pk_constraint(table, schema=store.schema)["constrained_columns"]
        assert set(keys) <= set(pk)


def test_migrations_are_idempotent_and_upgrade_an_old_database(sql_backend: Backend) -> None:
    old = sql_backend.open()
    assert old.migrate(upto=1) == 1  # a database made by a release that had only the first migration
    assert "ah_long_term_memory" not in _inspect(old).get_table_names(schema=old.schema)
    old.append("kept", [{"n": 1}])
    new = sql_backend.open()
    assert new.load("kept").entries == ({"n": 1},)  # first use migrates to the latest version
    assert new.schema_version() == LATEST_VERSION and new.migrate() == LATEST_VERSION
    from memlab.stores.sql import schema_version

    with new.engine.connect() as conn:  # through the store's engine, which knows the PostgreSQL schema
        versions = conn.execute(sa.select(schema_version.c.version).order_by(schema_version.c.version)).scalars().all()
    assert versions == [m.version for m in MIGRATIONS]
    assert "memlab_records" not in _inspect(new).get_table_names(schema=new.schema)  # the unused layer is gone
    new.add_memories([MemoryRow(("a",), "k", {"v": 1}, "FACT", "s", T0, T0)])
    assert new.count_memories(("a",)) == 1


def test_a_database_from_before_session_versions_counts_on_from_zero(sql_backend: Backend) -> None:
    old = sql_backend.open()
    assert old.migrate(upto=5) == 5  # the last schema without versions and save counts
    from memlab.stores.sql import _sessions_v1, session_entries

    with old._raw_engine().begin() as conn:  # a session as that release stored it (no version column)
        conn.execute(_sessions_v1().insert().values(session_id="kept", next_seq=1, created_at=T0, updated_at=T0))
        conn.execute(session_entries.insert().values(session_id="kept", seq=0, body='{"n":1}'))
    new = sql_backend.open()
    kept = new.load("kept")
    assert kept.entries == ({"n": 1},) and kept.version == 0 and new.schema_version() == LATEST_VERSION
    assert new.append("kept", [{"n": 2}]) == 1 and new.version("kept") == 1
    new.delete_session("kept")
    assert sql_backend.open().version("kept") == 2
    with new.exclusive(("ns",)) as block:
        assert block.before == 0
    assert {"memlab_session_versions", "memlab_namespace_versions"} <= set(
        _inspect(new).get_table_names(schema=new.schema)
    )


def test_concurrent_first_use_migrates_once(sql_backend: Backend) -> None:
    stores = [sql_backend.open() for _ in range(4)]
    with ThreadPoolExecutor(len(stores)) as pool:  # a thread's exception is raised by list()
        list(pool.map(lambda store, i: store.append(f"s{i}", [{"i": i}]), stores, range(len(stores))))
    assert stores[0].sessions() == ["s0", "s1", "s2", "s3"] and stores[0].schema_version() == LATEST_VERSION


def test_upserts_are_written_per_dialect(sql_backend: Backend) -> None:
    store = sql_backend.open()
    store.migrate()
    statements: list[str] = []
    event.listen(store.engine, "before_cursor_execute", lambda c, cur, stmt, *a: statements.append(stmt.upper()))
    store.append("s", [{"n": 1}])
    store.add_memories([MemoryRow(("ns",), "k", {"v": 1}, "FACT", "s", T0, T0)])
    # the session, the memory row and the namespace's version
    upserts = [s for s in statements if s.startswith("INSERT") and "SESSION_ENTRIES" not in s]
    expected = "ON DUPLICATE KEY UPDATE" if store.dialect in ("mysql", "mariadb") else "ON CONFLICT"
    assert len(upserts) == 3 and all(expected in s for s in upserts), upserts
    assert not any("MERGE" in s for s in statements)


@pytest.mark.parametrize("upto", [1, 2])
def test_an_old_mariadb_database_gets_binary_keys(isolate: Any, tmp_path: Path, upto: int) -> None:
    """A database made before migration 3 (utf8mb4_bin pads with spaces): "X" and "X " were one session."""
    with isolate("mariadb", tmp_path) as backend:
        old = backend.open()
        assert old.migrate(upto=upto) == upto
        outside = sa.create_engine(old.url, poolclass=sa.pool.NullPool)
        row = "INSERT INTO memlab_sessions VALUES ('{}', NULL, 1, NOW(), NOW())"
        with outside.begin() as conn:
            conn.exec_driver_sql(row.format("X"))
            conn.exec_driver_sql("INSERT INTO memlab_session_entries VALUES ('X', 0, '{\"n\": 1}')")
        with pytest.raises(sa.exc.IntegrityError), outside.begin() as conn:  # the old schema's defect
            conn.exec_driver_sql(row.format("X "))
        outside.dispose()
        new = backend.open()
        new.append("X ", [{"n": 2}])
        assert new.load("X").entries == ({"n": 1},) and new.load("X ").entries == ({"n": 2},)
        assert new.sessions() == ["X", "X "]


def test_sqlite_file_lands_in_the_run_directory_in_wal_mode(tmp_path: Path) -> None:
    store = SqlStore(path="memlab.sqlite", run_dir=str(tmp_path / "run"))
    store.append("s", [{"n": 1}])
    assert (tmp_path / "run" / "memlab.sqlite").exists()
    with store.engine.connect() as conn:
        assert conn.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
    store.close()
    assert SqlStore(path=str(tmp_path / "run" / "memlab.sqlite")).load("s").entries == ({"n": 1},)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({}, "exactly one of store.url or store.path"),
        ({"url": "sqlite:///a.db", "path": "b.db"}, "exactly one"),
        ({"url": "not a url"}, "not a database URL"),
        ({"url": "oracle://scott@db/x"}, "unsupported database 'oracle'"),
        ({"path": "x.db", "schema": "s"}, "PostgreSQL only"),
    ],
)
def test_bad_store_settings_name_the_key(kwargs: dict[str, str], message: str) -> None:
    with pytest.raises(MemlabError, match=message):
        SqlStore(**kwargs)


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("/proc/memlab/x.sqlite", r"store\.path: cannot create the folder of /proc/memlab/x\.sqlite"),
        ("/dev/null/x.sqlite", r"store\.path: cannot create the folder of /dev/null/x\.sqlite"),
        ("/", r"store\.url: cannot use the database at sqlite:///"),
    ],
)
def test_an_unusable_sqlite_path_is_one_user_error(path: str, message: str) -> None:
    """The defect: an unwritable store path ended the run with a traceback."""
    with pytest.raises(MemlabError, match=message):
        SqlStore(path=path).append("s", [{"n": 1}])
