"""Stop a replay after session k and resume it in another process: the checkpoint in a session store.

What a replay needs to carry on, saved at a session boundary: the records so far (metrics are
computed over all of them), the `Cursor`, each component's `checkpoint()` state, the run's scope
in the store (`memlab.stores.scoped`) and everything that scope held then: the histories
(`agent_memory` on SQLite, PostgreSQL, MySQL or Redis) and long-term memories with their access
counts. A resume restores the scope to that state before it replays, so writes of an attempt
killed part way are undone, not replayed twice. The checkpoint is one entry under the session id
``memlab-checkpoint:<name>``, written in one transaction: the state pickled, base64 in JSON. A
pickle is exact (datetimes, tuples, events) and only this memlab reads it back: a checkpoint
is for resuming a run with the same code, not an archive format.
"""

from __future__ import annotations

import base64
import pickle
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from memlab.errors import MemlabError
from memlab.sim.records import Record
from memlab.sim.replay import Cursor
from memlab.stores.base import SessionState, SessionStore
from memlab.stores.scoped import ScopeState

PREFIX = "memlab-checkpoint:"


@dataclass(frozen=True)
class Checkpoint:
    """A stopped replay: its records, where it stopped, the components' states (in component order),
    its scope in the store and what the scope held."""

    records: tuple[Record, ...]
    cursor: Cursor
    states: tuple[dict[str, Any], ...]
    scope: str
    stored: ScopeState


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
    if not hasattr(checkpoint, "stored"):
        raise MemlabError(
            f"{checkpoint_id(name)!r} was saved by an earlier memlab, without the run's stored state; "
            "run again from the start with sim.stop_after_session=K"
        )
    return checkpoint
