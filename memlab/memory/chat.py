"""ChatMemory: the plain multi-turn history (second design document, "ChatMemory: 基础会话上下文")."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol, runtime_checkable

from memlab.messages import Message


@runtime_checkable
class ChatMemory(Protocol):
    """A session's stored messages; `replace` swaps them all at once (the Memory layer's write)."""

    def append(self, message: Message) -> None: ...

    def messages(self) -> list[Message]: ...

    def replace(self, messages: Iterable[Message]) -> None: ...

    def clear(self) -> None: ...

    def __len__(self) -> int: ...


class InMemoryChatMemory:
    """ChatMemory in a Python list: the default, and the reference the stored backends must match."""

    def __init__(self, session_id: str = "default") -> None:
        self.session_id = session_id
        self._messages: list[Message] = []

    def append(self, message: Message) -> None:
        self._messages.append(message)

    def messages(self) -> list[Message]:
        return list(self._messages)

    def replace(self, messages: Iterable[Message]) -> None:
        self._messages = list(messages)

    def clear(self) -> None:
        self._messages.clear()

    def __len__(self) -> int:
        return len(self._messages)


def in_memory_history(session_id: str) -> InMemoryChatMemory:
    """The default history factory of the `agent_memory` group."""
    return InMemoryChatMemory(session_id)
