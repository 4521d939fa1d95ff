"""AgentMemory: the items each step of an agent loop adds, compressed after every write.

Second design document, sections 2-6: a memory holds `items` (messages, function calls, function
call outputs), an optional `summary` and an optional `MemoryCompressor`; the runtime writes with
`add_user_input`, `add_output_items` and `add_tool_output` and reads with `get_items` and
`get_summary`. Items may carry the id of the message they came from (`source_id`, beyond the
document), which compressors pass on: kept items keep it, and a summary's SUMMARY event lists the
ids it folded. After every write the compressor runs (`maybe_compress`). Here the write and the
compression are one transaction of the session store, so a concurrent reader never sees an
uncompressed state and a concurrent writer never loses an item to a compaction. One exception,
beyond the document: a write the compressor would leave unchanged is an append alone
(`StoreAgentMemory`); if another writer's uncompressed write (a restore, `compress=False`) came
just before it, a reader may see that state plus the new items until the compression that follows.

>>> memory = InMemoryAgentMemory()
>>> memory.add_user_input("Book a flight to Oslo")
>>> memory.add_output_items([FunctionCall(call_id="c1", name="search_flights")])
>>> memory.add_tool_output("c1", "SK4411 at 09:05")
>>> [type(i).__name__ for i in memory.get_items()]
['MessageItem', 'FunctionCall', 'FunctionCallOutput']
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from memlab.messages import FunctionCall, FunctionCallOutput, Item, MessageItem, item_from_dict, item_to_dict
from memlab.stores.base import SessionState, SessionStore, decode, encode
from memlab.stores.memory import InMemoryStore
from memlab.tokens import get_counter
from memlab.trace import MEMORY_COMPRESS, emit, timed

ItemLike = Item | Mapping[str, Any]
# Counts a compression's summary when the compressor has no counter of its own (the windowed one).
SUMMARY_COUNTER = "cl100k_base"


@dataclass(frozen=True)
class MemorySnapshot:
    """A memory's state: its items (oldest first) and its summary (None when it has none).

    Args:
        items: The items, oldest first.
        summary: The summary of what was compressed away (None: none).
    """

    items: tuple[Item, ...] = ()
    summary: str | None = None

    @classmethod
    def of(cls, items: Iterable[Item], summary: str | None = None) -> MemorySnapshot:
        """The document's ``MemorySnapshot.from(items, summary)``."""
        return cls(tuple(items), summary)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready, for saving a session (`Agent.resume` takes it back)."""
        return {"items": [item_to_dict(i) for i in self.items], "summary": self.summary}

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any]) -> MemorySnapshot:
        return cls(tuple(item_from_dict(i) for i in raw.get("items") or ()), raw.get("summary"))


@runtime_checkable
class MemoryCompressor(Protocol):
    """``MemorySnapshot compress(MemorySnapshot snapshot)``: must be pure (a store may retry it).

    Beyond the document, a compressor may also have ``settled_after(items) -> bool``: True when `items`
    appended to a snapshot `compress` returned, or returned unchanged, give one it returns unchanged.
    `StoreAgentMemory` then appends them without reading the memory back (ToolRoundsCompressor: items
    that start no tool round).
    """

    def compress(self, snapshot: MemorySnapshot) -> MemorySnapshot: ...


@runtime_checkable
class AgentMemory(Protocol):
    """The second design document's AgentMemory interface, plus snapshot/restore for sessions."""

    def add_user_input(self, input: str | ItemLike) -> None: ...

    def add_output_items(self, items: Iterable[ItemLike]) -> None: ...

    def add_tool_output(self, call_id: str, output: str, source_id: str | None = None) -> None: ...

    def get_items(self) -> list[Item]: ...

    def get_summary(self) -> str | None: ...

    def clear(self) -> None: ...

    def snapshot(self) -> MemorySnapshot: ...

    def restore(self, snapshot: MemorySnapshot) -> None: ...

    def update(self, edit: Callable[[MemorySnapshot], MemorySnapshot], *, compress: bool = True) -> MemorySnapshot: ...

    def maybe_compress(self) -> MemorySnapshot: ...

    def compact(self, compressor: MemoryCompressor | None = None) -> MemorySnapshot: ...

    def __len__(self) -> int: ...


def as_item(raw: ItemLike) -> Item:
    return raw if isinstance(raw, MessageItem | FunctionCall | FunctionCallOutput) else item_from_dict(raw)


def _state(snapshot: MemorySnapshot) -> SessionState:
    return SessionState(tuple(item_to_dict(i) for i in snapshot.items), snapshot.summary)


def _snapshot(state: SessionState) -> MemorySnapshot:
    return MemorySnapshot(tuple(item_from_dict(e) for e in state.entries), state.summary)


@dataclass(frozen=True)
class _Known:
    """The memory's state at the store's `version`, and the compressor it is known to be an output of (None: none)."""

    version: int
    snapshot: MemorySnapshot
    compressed_by: MemoryCompressor | None


class StoreAgentMemory:
    """AgentMemory in a `SessionStore` under `session_id` (the document's JdbcAgentMemory, for any store).

    As `StoreChatMemory` does, it keeps the state it last read or wrote with the session's
    `SessionStore.version`: a read checks the version (one cheap read) and decodes the stored items
    only after a change by another writer. A write to a state its compressor returned, of items the
    compressor says it would leave as they are (`MemoryCompressor`'s ``settled_after``), is an append of
    those items alone: on 4,000 messages, `agent_memory=tool_rounds` decoded and re-encoded every item on
    every write (issue 29, docs/speed.md "Scale"). When another write came first (the version says so),
    the compressor then runs on the whole state, which ends as one transaction of both would leave it.

    Args:
        store: Where the items and summary are kept.
        session_id: The session they are kept under.
        compressor: Applied on every write, in the store's transaction (None: nothing is compressed).
    """

    def __init__(self, store: SessionStore, session_id: str, compressor: MemoryCompressor | None = None) -> None:
        self.store = store
        self.session_id = session_id
        self.compressor = compressor
        self._known: _Known | None = None  # one value, replaced whole: each state is labeled with its own version

    def add_user_input(self, input: str | ItemLike) -> None:
        self._write([MessageItem(role="user", content=input) if isinstance(input, str) else as_item(input)])

    def add_output_items(self, items: Iterable[ItemLike]) -> None:
        self._write([as_item(i) for i in items])

    def add_tool_output(self, call_id: str, output: str, source_id: str | None = None) -> None:
        self._write([FunctionCallOutput(call_id=call_id, output=output, source_id=source_id)])

    def _write(self, items: Sequence[Item]) -> None:
        if not items:
            return
        known, compressor = self._known, self.compressor
        settled_after = getattr(compressor, "settled_after", None)  # MemoryCompressor's optional method
        if compressor is not None and not (
            known is not None and known.compressed_by is compressor and settled_after and settled_after(items)
        ):
            self.update(lambda s: MemorySnapshot(s.items + tuple(items), s.summary))
            return
        entries = [item_to_dict(i) for i in items]
        self._known = None  # unknown if the append fails
        version = self.store.append(self.session_id, entries)
        if known is None or version != known.version + 1:  # another write came between
            if compressor is not None:
                self.maybe_compress()
            return
        stored = tuple(item_from_dict(decode(encode(e))) for e in entries)  # the items as the store gives them back
        self._known = _Known(version, MemorySnapshot(known.snapshot.items + stored, known.snapshot.summary), compressor)

    def get_items(self) -> list[Item]:
        return list(self.snapshot().items)

    def get_summary(self) -> str | None:
        return self.snapshot().summary

    def snapshot(self) -> MemorySnapshot:
        """Items and summary from one consistent read."""
        known = self._known
        if known is not None and self.store.version(self.session_id) == known.version:
            return known.snapshot
        state = self.store.load(self.session_id)
        self._known = _Known(state.version, _snapshot(state), None)
        return self._known.snapshot

    def restore(self, snapshot: MemorySnapshot) -> None:
        """Make `snapshot` the memory's state in one transaction (no compression)."""
        self.update(lambda _old: snapshot, compress=False)

    def clear(self) -> None:
        self._known = None  # read again (empty): a delete's version is not returned
        self.store.delete_session(self.session_id)

    def maybe_compress(self) -> MemorySnapshot:
        """Run the compressor on the current state, as after every write."""
        return self.update(lambda s: s)

    def compact(self, compressor: MemoryCompressor | None = None) -> MemorySnapshot:
        """Compress now with `compressor` (default: the memory's own); the coding agent's compact."""
        use = compressor or self.compressor
        if use is None:
            raise ValueError("compact() needs a compressor: this memory has none, pass one")
        return self._update(lambda s: s, use)

    def update(self, edit: Callable[[MemorySnapshot], MemorySnapshot], *, compress: bool = True) -> MemorySnapshot:
        """`edit` (then the compressor) becomes the state in one transaction; nothing is written if either raises."""
        return self._update(edit, self.compressor if compress else None)

    def _update(
        self, edit: Callable[[MemorySnapshot], MemorySnapshot], compressor: MemoryCompressor | None
    ) -> MemorySnapshot:
        seen: dict[str, Any] = {}

        def step(state: SessionState) -> SessionState:
            edited = edit(_snapshot(state))
            after = edited
            if compressor is not None:
                with timed() as t:
                    after = compressor.compress(edited)
                seen.update(edited=edited, after=after, us=t["us"])
            return _state(after)

        self._known = None  # unknown if the update fails
        state = self.store.update(self.session_id, step)
        result = _snapshot(state)
        self._known = _Known(state.version, result, compressor)
        if seen and seen["after"] != seen["edited"]:  # reported once, after the commit
            counter = getattr(compressor, "counter", None) or get_counter(SUMMARY_COUNTER)
            summary = seen["after"].summary
            emit(
                MEMORY_COMPRESS,
                compressor=type(compressor).__name__,
                session_id=self.session_id,
                before_items=len(seen["edited"].items),
                after_items=len(seen["after"].items),
                summary_length=len(summary or ""),
                summary_tokens=counter.count_text(summary) if summary else 0,
                counter=counter.name,
                latency_us=seen["us"],
            )
        return result

    def __len__(self) -> int:
        return self.store.count(self.session_id)


class InMemoryAgentMemory(StoreAgentMemory):
    """The default AgentMemory: a private in-memory store (the document's InMemoryAgentMemory).

    Args:
        compressor: Applied on every write (None: nothing is compressed).
        session_id: The name of the session it holds.
    """

    def __init__(self, compressor: MemoryCompressor | None = None, session_id: str = "default") -> None:
        super().__init__(InMemoryStore(), session_id, compressor)
