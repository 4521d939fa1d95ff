"""Sessions: `Agent.new_session()` gives each session its own memory (second design document, section 5).

The supplier decides where memory lives: by default a fresh `InMemoryAgentMemory`, or with
`Agent.on_store` a `StoreAgentMemory` per session id in SQLite, PostgreSQL, MySQL or Redis, which
is what lets a coding agent resume yesterday's session and fork it to try something else.
Sessions never share a memory object, so concurrent sessions cannot see each other's items.

>>> from memlab.stores import InMemoryStore
>>> agent = Agent.on_store(InMemoryStore())
>>> s = agent.new_session("mon")
>>> s.memory.add_user_input("refactor the parser")
>>> fork = agent.fork(s, "mon-try-2")
>>> fork.memory.add_user_input("try a PEG instead")
>>> s.item_count(), fork.item_count(), agent.resume("mon").item_count()
(1, 2, 1)
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from memlab.errors import MemlabError
from memlab.memory.agent import AgentMemory, InMemoryAgentMemory, MemoryCompressor, MemorySnapshot, StoreAgentMemory
from memlab.runtime.agent import Component, Runtime
from memlab.stores.base import SessionStore
from memlab.trace import SESSION_FORK, emit

if TYPE_CHECKING:
    from memlab.dialogues.model import Session

MemorySupplier = Callable[[str], AgentMemory]


@dataclass
class AgentSession:
    """One conversation of an agent: its id and its own memory.

    Args:
        id: The session's id.
        memory: Its own memory.
        compactor: What `compact()` compresses with by default (None: the memory's own compressor).
    """

    id: str
    memory: AgentMemory
    compactor: MemoryCompressor | None = None

    def item_count(self) -> int:
        return len(self.memory)

    def save(self) -> MemorySnapshot:
        """The session's state (a stored memory is already persisted; this is for saving it elsewhere)."""
        return self.memory.snapshot()

    def compact(self, compressor: MemoryCompressor | None = None) -> MemorySnapshot:
        """Compress now: with `compressor`, else the agent's compactor, else the memory's own compressor."""
        return self.memory.compact(compressor or self.compactor)


class Agent:
    """Makes sessions; `memory_supplier(session_id)` gives each its memory (default: in memory).

    Args:
        memory_supplier: Gives each new session its memory from the session id (None: in memory).
        compactor: What each session's `compact()` compresses with by default (None: the memory's own compressor).
    """

    def __init__(
        self, memory_supplier: MemorySupplier | None = None, compactor: MemoryCompressor | None = None
    ) -> None:
        self.memory_supplier = memory_supplier or (lambda _id: InMemoryAgentMemory())
        self.compactor = compactor

    @classmethod
    def on_store(
        cls, store: SessionStore, compressor: MemoryCompressor | None = None, compactor: MemoryCompressor | None = None
    ) -> Agent:
        """Sessions persisted in `store`, each compressed after every write by `compressor`."""
        return cls(lambda session_id: StoreAgentMemory(store, session_id, compressor), compactor)

    def new_session(self, session_id: str | None = None) -> AgentSession:
        """A session with an empty memory of its own (a new random id unless one is given)."""
        sid = session_id or uuid.uuid4().hex
        memory = self.memory_supplier(sid)
        if len(memory) or memory.get_summary() is not None:
            raise MemlabError(f"session {sid!r} already has stored memory; resume it or pick another id")
        return AgentSession(sid, memory, self.compactor)

    def resume(self, session_id: str, snapshot: MemorySnapshot | None = None) -> AgentSession:
        """Continue a session: from what the store holds for `session_id`, or from a saved `snapshot`."""
        memory = self.memory_supplier(session_id)
        if snapshot is not None:
            memory.restore(snapshot)
        elif not len(memory) and memory.get_summary() is None:
            raise MemlabError(
                f"session {session_id!r} has nothing stored to resume; pass the snapshot saved with "
                "session.save(), or make the agent with Agent.on_store(store)"
            )
        return AgentSession(session_id, memory, self.compactor)

    def fork(self, session: AgentSession, session_id: str | None = None) -> AgentSession:
        """A new session starting from a copy of `session`'s items and summary; the two then diverge."""
        new = self.new_session(session_id)
        new.memory.restore(session.save())
        return new


class SessionEndOps(Component):
    """`+hooks@hooks.sessions=sessions`: the coding agent's session operations at every session end, measured.

    `fork: true` saves a copy of the history under ``<history id>@<session id>`` in the same store
    (a branch to resume later; a SESSION_FORK event counts its entries); `compactor` compacts an
    agent memory with it (the coding agent's compact; MEMORY_COMPRESS reports before/after items).

    Parameters: the fields of `memlab.memory.schemas.SessionEndOpsConfig`, each documented there once.
    """

    def __init__(self, fork: bool = False, compactor: MemoryCompressor | None = None) -> None:
        self.fork = fork
        self.compactor = compactor

    def on_session_end(self, runtime: Runtime, session: Session) -> None:
        history = runtime.history
        stored = getattr(history, "memory", history)  # an AgentMemoryHistory's memory, or a ChatMemory
        store, history_id = getattr(stored, "store", None), getattr(stored, "session_id", None)
        if self.fork:
            if store is None or history_id is None:
                raise MemlabError(f"hooks.sessions.fork needs a stored history, not {type(history).__name__}")
            branch = f"{history_id}@{session.id}"
            state = store.load(history_id)
            store.update(branch, lambda _old: state)
            emit(SESSION_FORK, session_id=branch, entries=len(state.entries))
        if self.compactor is not None:
            if not isinstance(stored, StoreAgentMemory):
                raise MemlabError("hooks.sessions.compactor needs an agent memory (agent_memory=windowed|hybrid|...)")
            stored.compact(self.compactor)
