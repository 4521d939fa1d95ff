"""What every peer wrapper shares: importing the peer's library, and one key per message.

`Keys` gives each distinct `Message` a short string key that travels inside the peer's own
message type (langchain's `id`, llama-index's `additional_kwargs`), and caches the converted
object, so a message is converted once per run and comes back as the same `Message`.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Coroutine
from types import ModuleType
from typing import Any, Generic, TypeVar

from memlab.errors import MemlabError, MissingExtraError
from memlab.messages import Message

PEERS_EXTRA = "memlab[peers]"
T = TypeVar("T")


def require(module: str, strategy: str) -> ModuleType:
    """Import a peer's library, or fail with the extra that installs it."""
    try:
        return importlib.import_module(module)
    except ImportError as e:
        raise MissingExtraError(
            f"context strategy {strategy} needs {module.split('.')[0]}, which is not installed; "
            f"install the peers extra: pip install '{PEERS_EXTRA}'"
        ) from e


class Keys(Generic[T]):
    """Message <-> key, and Message -> the peer's converted message (built once by `convert`)."""

    def __init__(self, convert: Callable[[Message, str], T]) -> None:
        self._convert = convert
        self._key: dict[Message, str] = {}
        self._message: dict[str, Message] = {}
        self._peer: dict[Message, T] = {}

    def key(self, m: Message) -> str:
        k = self._key.get(m)
        if k is None:
            k = self._key[m] = f"memlab-{len(self._key)}"
            self._message[k] = m
        return k

    def peer(self, m: Message) -> T:
        out = self._peer.get(m)
        if out is None:
            out = self._peer[m] = self._convert(m, self.key(m))
        return out

    def message(self, key: object) -> Message | None:
        """The message a key stands for (None for a message the peer made)."""
        return self._message.get(key) if isinstance(key, str) else None


def drive(coroutine: Coroutine[Any, Any, T]) -> T:
    """Run a coroutine that never waits (AutoGen's contexts only compute) without an event loop."""
    try:
        coroutine.send(None)
    except StopIteration as done:
        return done.value
    coroutine.close()
    raise MemlabError("a peer's coroutine waited on I/O; memlab drives peer contexts synchronously")
