"""The Redis store for session memory (`store=redis`): one list and one summary key per session.

Appends are one MULTI/EXEC; `update` watches the session's keys (WATCH, then MULTI/EXEC) and
retries when another client wrote in between, so a compaction never loses a concurrent append.
Nothing is sent before EXEC, so a writer that dies mid-update leaves the old state. Every write
counts itself in a ``:version`` key in the same MULTI/EXEC (`SessionStore.version`); that key
outlives a deleted session, so its count never goes back. Long-term
memories need scoped listings and conditional updates; they live in the SQL or in-memory store.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from memlab.errors import MemlabError
from memlab.stores.base import Entry, SessionState, Update, decode, encode, plan_update
from memlab.stores.memories import check_key

DEFAULT_PREFIX = "memlab:"


class RedisStore:
    """Sessions in Redis under `prefix` (``{prefix}session:{id}:entries``, ``:summary`` and ``:version``).

    Parameters: the fields of `memlab.stores.schemas.RedisStoreConfig`, each documented there once.
    """

    def __init__(self, url: str = "redis://127.0.0.1:6379/0", prefix: str = DEFAULT_PREFIX) -> None:
        import redis

        try:
            self.client: Any = redis.Redis.from_url(url, decode_responses=True)
        except ValueError as e:
            raise MemlabError(f"store.url: {url!r} is not a Redis URL ({e})") from e
        self.url = url
        self.prefix = prefix
        self._reachable = False

    def _check(self) -> None:
        """On first use, check that the server answers, so that a wrong URL is a clear error."""
        if not self._reachable:
            import redis

            try:
                self.client.ping()
            except redis.exceptions.ConnectionError as e:
                raise MemlabError(f"store.url: cannot reach Redis at {self.url} ({e})") from e
            self._reachable = True

    def _pipeline(self) -> Any:
        """A MULTI/EXEC pipeline."""
        self._check()
        return self.client.pipeline(transaction=True)

    def __repr__(self) -> str:
        return f"RedisStore({self.url!r}, prefix={self.prefix!r})"

    def _keys(self, session_id: str) -> tuple[str, str, str]:
        check_key(session_id)
        base = f"{self.prefix}session:{session_id}"
        return f"{base}:entries", f"{base}:summary", f"{base}:version"

    @property
    def _index(self) -> str:
        return f"{self.prefix}sessions"

    def load(self, session_id: str) -> SessionState:
        entries_key, summary_key, version_key = self._keys(session_id)
        pipe = self._pipeline()
        pipe.lrange(entries_key, 0, -1)
        pipe.get(summary_key)
        pipe.get(version_key)
        bodies, summary, version = pipe.execute()
        return SessionState(tuple(decode(b) for b in bodies), summary, int(version or 0))

    def append(self, session_id: str, entries: Sequence[Entry]) -> int:
        entries_key, _, version_key = self._keys(session_id)
        pipe = self._pipeline()
        if entries:
            pipe.rpush(entries_key, *(encode(e) for e in entries))
        pipe.sadd(self._index, session_id)
        pipe.incr(version_key)
        return int(pipe.execute()[-1])

    def update(self, session_id: str, fn: Update) -> SessionState:
        entries_key, summary_key, version_key = self._keys(session_id)

        def attempt(pipe: Any) -> SessionState:
            old_bodies = pipe.lrange(entries_key, 0, -1)  # immediate: the keys are WATCHed
            old, rewrite = plan_update(fn, old_bodies, pipe.get(summary_key))
            version = int(pipe.get(version_key) or 0)
            pipe.multi()
            pipe.sadd(self._index, session_id)  # an update creates the session, as on every backend
            if rewrite is None:
                return replace(old, version=version)
            pipe.set(version_key, version + 1)  # WATCHed: no other write came in between
            if rewrite.drop == len(old_bodies):
                pipe.delete(entries_key)
            elif rewrite.drop:
                pipe.ltrim(entries_key, rewrite.drop, -1)
            if rewrite.add:
                pipe.rpush(entries_key, *rewrite.add)
            if rewrite.summary is None:
                pipe.delete(summary_key)
            else:
                pipe.set(summary_key, rewrite.summary)
            return replace(rewrite.state, version=version + 1)

        self._check()
        watched = (entries_key, summary_key, version_key)
        result: SessionState = self.client.transaction(attempt, *watched, value_from_callable=True)
        return result

    def exists(self, session_id: str) -> bool:
        return bool(self.client.sismember(self._index, session_id))

    def count(self, session_id: str) -> int:
        return int(self.client.llen(self._keys(session_id)[0]))

    def version(self, session_id: str) -> int:
        return int(self.client.get(self._keys(session_id)[2]) or 0)

    def sessions(self) -> list[str]:
        return sorted(self.client.smembers(self._index))

    def delete_session(self, session_id: str) -> None:
        entries_key, summary_key, version_key = self._keys(session_id)
        pipe = self._pipeline()
        pipe.delete(entries_key, summary_key)
        pipe.srem(self._index, session_id)
        pipe.incr(version_key)
        pipe.execute()

    def close(self) -> None:
        self.client.close()
