"""Helpers shared by the long-term memory tests: a call context on a virtual clock, a store reopened."""

from __future__ import annotations

from datetime import datetime

from memlab.longterm import MemoryStore
from memlab.runtime import CallContext, SecurityContext

T0 = datetime(2024, 1, 1, 9, 0)


def context(user: str = "u1", agent: str = "chat", now: datetime | None = T0, query: str | None = None) -> CallContext:
    """A call context for `user` and `agent` at `now` (what the runtime would hand a stage)."""
    return CallContext(
        dialogue_id="d", session_id="s", turn=0, now=now, security=SecurityContext(user, agent), query=query
    )


def reopen(store: MemoryStore) -> MemoryStore:
    """Another process's store object on the same SQL database."""
    from memlab.stores import SqlStore

    rows = store.rows
    return MemoryStore(SqlStore(url=rows.url.render_as_string(hide_password=False), schema=rows.schema))
