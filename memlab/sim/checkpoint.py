"""Stop a replay after session k and resume it in another process: the checkpoint in a session store.

What a replay needs to carry on, saved at a session boundary: the records so far (metrics are
computed over all of them), the `Cursor`, each component's `checkpoint()` state, the run's scope
in the store (`memlab.stores.scoped`) and everything that scope held then: the histories
(`agent_memory` on SQLite, PostgreSQL, MySQL or Redis) and long-term memories with their access
counts. A resume restores the scope to that state before it replays, so writes of an attempt
killed part way are undone, not replayed twice. It also carries the run's fingerprint (its resolved
config, but for what may differ between the stopping and the resuming command) and the data's hash:
a resume of another configuration or other data would publish a mix of two runs, so it is refused.
The checkpoint is one entry under the session id ``memlab-checkpoint:<name>`` (a sweep job's name
says which job), written in one transaction: the state pickled, base64 in JSON. A pickle is exact
(datetimes, tuples, events) and only this memlab reads it back: a checkpoint is for resuming a run
with the same code, not an archive format.
"""

from __future__ import annotations

import base64
import os
import pickle
import socket
import textwrap
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memlab.errors import MemlabError
from memlab.sim.records import Record
from memlab.sim.replay import Cursor
from memlab.stores.base import SessionState, SessionStore
from memlab.stores.scoped import ScopeState

PREFIX = "memlab-checkpoint:"
LOCK_PREFIX = "memlab-checkpoint-lock:"


DIFFERENCES_SHOWN = 5  # config keys a refused resume names; the rest are counted
VALUE_CHARS = 60  # of each value it names


@dataclass(frozen=True)
class Checkpoint:
    """A stopped replay: its records, where it stopped, the components' states (in component order),
    its scope in the store and what the scope held, the states of the models whose state spans the run
    (`memlab.llm.run_wide_models`, in the order built), and what it belongs to: its config's fingerprint
    (dotted key: resolved value) and the sha256 of its dialogues."""

    records: tuple[Record, ...]
    cursor: Cursor
    states: tuple[dict[str, Any], ...]
    scope: str
    stored: ScopeState
    models: tuple[dict[str, Any], ...]
    config: dict[str, Any]
    data: str


def checkpoint_id(name: str) -> str:
    return PREFIX + name


def save_checkpoint(store: SessionStore, name: str, checkpoint: Checkpoint) -> None:
    """Replace the run's checkpoint in `store` with `checkpoint` (one transaction)."""
    blob = base64.b64encode(pickle.dumps(checkpoint, protocol=pickle.HIGHEST_PROTOCOL)).decode("ascii")
    store.update(checkpoint_id(name), lambda _old: SessionState(({"checkpoint": blob},), None))


def load_checkpoint(store: SessionStore, name: str) -> Checkpoint:
    """The run's checkpoint; a user error naming the store key when there is none."""
    entries: Sequence[Mapping[str, Any]] = store.load(checkpoint_id(name)).entries
    if not entries:
        raise MemlabError(
            f"sim.resume=true: no checkpoint {checkpoint_id(name)!r} in the configured store; run first with "
            "sim.stop_after_session=K and the same store (a SQL or Redis store, not store=memory)"
        )
    checkpoint = pickle.loads(base64.b64decode(entries[0]["checkpoint"]))
    if not isinstance(checkpoint, Checkpoint):
        raise MemlabError(f"{checkpoint_id(name)!r} in the store is not a memlab checkpoint")
    if not hasattr(checkpoint, "config"):  # the newest field: older checkpoints lack it, and some the stored state
        raise MemlabError(
            f"{checkpoint_id(name)!r} was saved by an earlier memlab, without the fingerprint of its config and data "
            "(a resume could not tell whether it belongs to this run); stop again: run from the start with "
            "sim.stop_after_session=K"
        )
    return checkpoint


def check_belongs(checkpoint: Checkpoint, name: str, config: Mapping[str, Any], data: str) -> None:
    """A user error unless `checkpoint` was saved by a run of this `config` (fingerprint) on this `data` (sha256):
    resuming another run's checkpoint would publish a mix of two runs. The config first: it names what differs."""
    key = checkpoint_id(name)
    was = checkpoint.config
    differ = sorted(k for k in was.keys() | config.keys() if was.get(k, _ABSENT) != config.get(k, _ABSENT))
    if differ:
        shown = "; ".join(
            f"{k}: {_shown(was.get(k, _ABSENT))} at the stop, {_shown(config.get(k, _ABSENT))} now"
            for k in differ[:DIFFERENCES_SHOWN]
        )
        more = f" (and {len(differ) - DIFFERENCES_SHOWN} more)" if len(differ) > DIFFERENCES_SHOWN else ""
        raise MemlabError(
            f"sim.resume=true: checkpoint {key!r} was saved by another configuration: {shown}{more}; resume with the "
            "settings it stopped with, or stop again with these"
        )
    if checkpoint.data != data:
        raise MemlabError(
            f"sim.resume=true: checkpoint {key!r} was saved from other data (dialogues sha256 {checkpoint.data[:12]} "
            f"at the stop, {data[:12]} now); resume on the data it stopped on, or stop again on this data"
        )


_ABSENT = object()  # a key one side's config does not have


def _shown(value: Any) -> str:
    """A config value as a refused resume names it: `absent` for a key the config does not have."""
    return "absent" if value is _ABSENT else textwrap.shorten(repr(value), VALUE_CHARS)


@contextmanager
def checkpoint_lock(store: SessionStore, name: str) -> Iterator[None]:
    """Hold checkpoint `name` for one replay: a second resume (or stop) of it meanwhile is refused in one line.

    Two at once restored the same scope under each other and published wrong metrics. The lock is an entry
    taken atomically with `store.update` (a row lock on SQL, WATCH on Redis) naming its process; one whose
    process is gone on this host (a killed resume) is taken over, so a kill never blocks the next resume.
    """
    me = _holder()

    def take(old: SessionState) -> SessionState:
        if old.entries and old.entries[0]["holder"] != me and _alive(old.entries[0]["holder"]):
            raise MemlabError(
                f"checkpoint {checkpoint_id(name)!r} is being resumed by another process ({_named(old.entries[0])}); "
                f"one resume at a time (if that process is gone, delete the store key {LOCK_PREFIX + name!r})"
            )
        return SessionState(({"holder": me},), None)

    store.update(LOCK_PREFIX + name, take)
    try:
        yield
    finally:
        store.update(LOCK_PREFIX + name, lambda old: SessionState((), None) if _held(old, me) else None)


def _held(state: SessionState, me: dict[str, Any]) -> bool:
    return bool(state.entries) and state.entries[0]["holder"] == me


def _holder() -> dict[str, Any]:
    """This process: its host, pid and start time (a pid is reused; with its start time it is not)."""
    return {"host": socket.gethostname(), "pid": os.getpid(), "started": _started(os.getpid())}


def _started(pid: int) -> str | None:
    """When process `pid` started, in clock ticks since boot (Linux's /proc); None where it cannot be told."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return None


def _alive(holder: Mapping[str, Any]) -> bool:
    """Whether the lock's holder may still run: on another host that cannot be told, so it may."""
    if holder["host"] != socket.gethostname():
        return True
    try:
        os.kill(holder["pid"], 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    return holder["started"] is None or _started(holder["pid"]) == holder["started"]


def _named(entry: Mapping[str, Any]) -> str:
    return f"pid {entry['holder']['pid']} on {entry['holder']['host']}"
