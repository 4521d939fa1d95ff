"""ChatMemory: the plain multi-turn history (second design document, "ChatMemory: 基础会话上下文").

`InMemoryChatMemory` keeps a Python list; `StoreChatMemory` keeps the same messages in any
`SessionStore` (SQLite, PostgreSQL, MySQL, Redis), so a session survives the process and can be
resumed. `update` is the Memory layer's write: the new history replaces the old in one
transaction, or not at all.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Sequence
from typing import Protocol, runtime_checkable

from memlab.memory.codec import message_from_entry, message_to_entry
from memlab.messages import Message
from memlab.stores.base import SessionState, SessionStore, decode, encode
from memlab.tokens import RunningTally

Edit = Callable[[list[Message]], Iterable[Message]]


@runtime_checkable
class ChatMemory(Protocol):
    """A session's stored messages; `replace` swaps them all at once, `update` reads and swaps atomically."""

    def append(self, message: Message) -> None: ...

    def messages(self) -> Sequence[Message]: ...

    def replace(self, messages: Iterable[Message]) -> None: ...

    def update(self, edit: Edit) -> list[Message]: ...

    def clear(self) -> None: ...

    def __len__(self) -> int: ...


class InMemoryChatMemory:
    """ChatMemory in a Python list: the default, and the reference the stored backends must match.

    Args:
        session_id: The name of the session it holds.
    """

    def __init__(self, session_id: str = "default") -> None:
        self.session_id = session_id
        self._messages: list[Message] = []
        self._lock = threading.RLock()
        self._tally = RunningTally()

    def append(self, message: Message) -> None:
        with self._lock:
            self._messages.append(message)

    def messages(self) -> Sequence[Message]:
        """A read-only view (`HistoryView`: not a copy) that knows its token total (`RunningTally`).

        Neither copied nor counted per call: a call costs what it reads of the history.
        """
        with self._lock:
            return self._tally.tallied(self._messages)

    def replace(self, messages: Iterable[Message]) -> None:
        new = list(messages)
        with self._lock:
            self._messages = new
            self._tally.reset()

    def update(self, edit: Edit) -> list[Message]:
        """`edit(messages)` becomes the history; if it raises, the history is untouched."""
        with self._lock:
            new = list(edit(list(self._messages)))
            self._messages = new
            self._tally.reset()
            return list(new)

    def clear(self) -> None:
        with self._lock:
            self._messages = []
            self._tally.reset()

    def __len__(self) -> int:
        return len(self._messages)


class StoreChatMemory:
    """ChatMemory in a `SessionStore` under `session_id`: every write is one transaction.

    The history as the store returns it is also kept decoded in memory, with the session's
    `SessionStore.version` it was read at: a replay reads it on every call, and decoding every
    stored entry each time made a replay quadratic. Each read checks the version (one cheap read)
    and reloads on any change by another writer, in this process or another; writes through this
    object keep the copy current, and it is dropped when a write fails or another write came first.

    Args:
        store: Where the messages are kept.
        session_id: The session they are kept under.
    """

    def __init__(self, store: SessionStore, session_id: str) -> None:
        self.store = store
        self.session_id = session_id
        self._lock = threading.Lock()
        self._decoded: list[Message] | None = None
        self._version = 0  # the store's version of the session that `_decoded` holds
        self._tally = RunningTally()  # over `_decoded`, reset whenever it is rebuilt

    def append(self, message: Message) -> None:
        entry = message_to_entry(message)
        with self._lock:
            cached, self._decoded = self._decoded, None  # unknown if the write fails
            version = self.store.append(self.session_id, [entry])
            if cached is not None and version == self._version + 1:  # no other write since the copy was made
                stored = message_from_entry(decode(encode(entry)))  # the entry as the store gives it back
                # The caller's object when equal, so caches keyed by message (token counts) hit by identity.
                same = stored == message and stored.timestamp == message.timestamp
                cached.append(message if same else stored)
                self._decoded, self._version = cached, version

    def messages(self) -> Sequence[Message]:
        with self._lock:
            decoded = self._decoded
            if decoded is None or self.store.version(self.session_id) != self._version:
                decoded = self._keep(self.store.load(self.session_id))
            return self._tally.tallied(decoded)

    def _keep(self, state: SessionState) -> list[Message]:
        """Make `state`, as the store returned it, this object's copy of the history."""
        self._decoded = [message_from_entry(e) for e in state.entries]
        self._version = state.version
        self._tally.reset()
        return self._decoded

    def replace(self, messages: Iterable[Message]) -> None:
        entries = tuple(message_to_entry(m) for m in messages)
        with self._lock:
            self._decoded = None
            self._tally.reset()
            self._keep(self.store.update(self.session_id, lambda s: SessionState(entries, s.summary)))

    def update(self, edit: Edit) -> list[Message]:
        """`edit(messages)` becomes the history in one transaction; if it raises, nothing is written."""

        def step(state: SessionState) -> SessionState:
            new = edit([message_from_entry(e) for e in state.entries])
            return SessionState(tuple(message_to_entry(m) for m in new), state.summary)

        with self._lock:
            self._decoded = None
            self._tally.reset()
            return list(self._keep(self.store.update(self.session_id, step)))

    def clear(self) -> None:
        with self._lock:
            self._decoded = None  # read again (empty) on the next `messages`: a delete's version is not returned
            self._tally.reset()
            self.store.delete_session(self.session_id)

    def __len__(self) -> int:
        """From the kept copy when the store's version says it is current (no count of the entries per call)."""
        with self._lock:
            decoded = self._decoded
            if decoded is not None and self.store.version(self.session_id) == self._version:
                return len(decoded)
        return self.store.count(self.session_id)


def chat_history(session_id: str, *, store: SessionStore, fresh: bool = True) -> StoreChatMemory:
    """`agent_memory=chat`: a ChatMemory per dialogue in the configured store.

    `fresh` clears what the store holds under that id first, so a replay starts from nothing
    even on a database a previous run filled.

    Args:
        session_id: The session (one dialogue) whose history this is. Parameters: the fields of
            `memlab.memory.schemas.ChatHistoryConfig`, each documented there once.
    """
    memory = StoreChatMemory(store, session_id)
    if fresh:
        memory.clear()
    return memory
