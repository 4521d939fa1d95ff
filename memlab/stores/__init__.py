"""Where memories persist: in memory, SQL (SQLite, PostgreSQL, MySQL/MariaDB) and Redis.

Every backend is a `SessionStore` (ordered entries plus a summary per session, with an atomic
read-modify-write); the in-memory and SQL ones also keep long-term memory rows (`MemoryRows`),
so `store=` moves long-term memory too. Each is a `store=` entry in `conf/store/`. `scoped(store, scope)`
is a run's own part of a shared store (`memlab.stores.scoped`).
"""

from typing import TYPE_CHECKING, Any

from memlab.stores.base import Entry, SessionState, SessionStore, close_store, decode, encode, plan_rewrite
from memlab.stores.memories import MAX_KEY_LENGTH, MemoryRow, MemoryRows, SaveBlock, ns_text
from memlab.stores.memory import InMemoryStore
from memlab.stores.redis_store import RedisStore
from memlab.stores.scoped import ScopeState, new_scope, scoped

if TYPE_CHECKING:
    from memlab.stores.sql import LATEST_VERSION, MIGRATIONS, SqlStore

_SQL_NAMES = ("LATEST_VERSION", "MIGRATIONS", "SqlStore")


def __getattr__(name: str) -> Any:
    """The SQL names, imported on first use: sqlalchemy takes most of a second to import."""
    if name in _SQL_NAMES:
        from memlab.stores import sql

        return getattr(sql, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "LATEST_VERSION",
    "MAX_KEY_LENGTH",
    "MIGRATIONS",
    "Entry",
    "InMemoryStore",
    "MemoryRow",
    "MemoryRows",
    "RedisStore",
    "SaveBlock",
    "ScopeState",
    "SessionState",
    "SessionStore",
    "SqlStore",
    "close_store",
    "decode",
    "encode",
    "new_scope",
    "ns_text",
    "plan_rewrite",
    "scoped",
]
