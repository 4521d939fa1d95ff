"""AgentMemory as the simulator's `History`, so replayed trajectories go through a compressor.

Each replayed message is written the way an agent runtime writes it (design document, section 4):
a user message with `add_user_input`, a model turn with `add_output_items`. A tool result goes in with
`add_output_items` too, as the `function_call_output` item `messages_to_items` makes of it, which is
what the document's ``addToolOutput(callId, output)`` writes plus the tool message's name. The
request is the summary as a leading system message, then the items as chat messages. Items keep their
messages' ids (`source_id`), so a probe's `kept_ids` and the SUMMARY events of compressors name the
replayed messages as they do without an AgentMemory.

Beyond the design document, whose next ``buildPrompt`` reads ``items = memory.getItems()`` and keeps
the summary beside them (``getSummary()``): sent with the items, the summary reaches the model, so what
a compressor folds is measured as kept in summary rather than lost. Its size is then part of every
request: a model's summary is capped (``summary_tokens``), but the document's counting line, written
when there is no model (``llm=null``), gains one line per compression, and the request with it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from memlab.memory.agent import MemoryCompressor, MemorySnapshot, StoreAgentMemory
from memlab.messages import FunctionCall, Item, Message, items_to_messages, messages_to_items, system
from memlab.stores.base import SessionStore


def snapshot_messages(snapshot: MemorySnapshot) -> list[Message]:
    """The summary (as a system message) followed by the items as chat messages."""
    head = [system(snapshot.summary)] if snapshot.summary else []
    return head + items_to_messages(snapshot.items)


class AgentMemoryHistory:
    """A `History` (append, messages, len) plus the Memory layer's `update` over an AgentMemory.

    Args:
        memory: The stored AgentMemory it reads and writes.
    """

    def __init__(self, memory: StoreAgentMemory) -> None:
        self.memory = memory
        self._items: tuple[Item, ...] = ()  # the items last read, and
        self._converted: list[Message] = []  # their messages (`items_to_messages`)

    def append(self, message: Message) -> None:
        items = messages_to_items([message])
        if message.role == "user":
            (item,) = items
            self.memory.add_user_input(item)
        else:
            self.memory.add_output_items(items)

    def messages(self) -> list[Message]:
        """`snapshot_messages` of the memory; the items added since the last read are the only ones converted.

        A replay reads the history before every call, and converting every item each time made a long
        dialogue's replay quadratic (issue 29). Items appended after the last read become messages of their
        own unless the first is a function call (it may join the message before it): then all are converted.
        """
        snapshot = self.memory.snapshot()
        items, last = snapshot.items, self._items
        if items is not last:  # not the very tuple last read
            n = len(last)
            # The same objects first (their ends, then all: == sees identity first), so items decoded
            # afresh (another writer's, a compressor's rewrite) are converted at once, not compared.
            grown = len(items) > n and not isinstance(items[n], FunctionCall)
            if grown and (n == 0 or (items[0] is last[0] and items[n - 1] is last[n - 1] and items[:n] == last)):
                self._converted.extend(items_to_messages(items[n:]))  # never returned itself: copied below
            else:
                self._converted = items_to_messages(items)
            self._items = items
        return [system(snapshot.summary), *self._converted] if snapshot.summary else list(self._converted)

    def replace(self, messages: Iterable[Message]) -> None:
        """The messages become the items (a leading summary message becomes a system item)."""
        items = messages_to_items(list(messages))
        self.memory.update(lambda _old: MemorySnapshot.of(items), compress=False)

    def update(self, edit: Callable[[list[Message]], Iterable[Message]]) -> list[Message]:
        """A memory strategy over the history as messages, written back in one transaction."""
        after = self.memory.update(
            lambda s: MemorySnapshot.of(messages_to_items(list(edit(snapshot_messages(s))))), compress=False
        )
        return snapshot_messages(after)

    def clear(self) -> None:
        self.memory.clear()

    def __len__(self) -> int:
        return len(self.memory)


def agent_history(
    session_id: str, *, store: SessionStore, compressor: MemoryCompressor | None = None, fresh: bool = True
) -> AgentMemoryHistory:
    """`agent_memory=windowed|hybrid|per_task`: an AgentMemory per dialogue in the configured store.

    `fresh` clears what the store holds under that id first, so every replay starts from nothing.

    Args:
        session_id: The session (one dialogue) whose history this is. Parameters: the fields of
            `memlab.memory.schemas.AgentHistoryConfig`, each documented there once.
    """
    memory = StoreAgentMemory(store, session_id, compressor)
    if fresh:
        memory.clear()
    return AgentMemoryHistory(memory)
