"""StoreAgentMemory keeps its state: reads decode nothing while it is current, and a tool_rounds write that starts
no tool round appends its items alone; the history over it converts only new items. What it holds, returns and
reports is what the one transaction of a write and its compression, and a full conversion, give."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memlab.memory import MemorySnapshot, StoreAgentMemory, ToolRoundsCompressor, agent_history
from memlab.memory import history as history_module
from memlab.memory.history import snapshot_messages
from memlab.messages import FunctionCall, FunctionCallOutput, Item, Message, MessageItem, ToolCall, items_to_messages
from memlab.stores import InMemoryStore
from memlab.stores.base import SessionState, Update
from memlab.trace import Event, recording


class CountingStore(InMemoryStore):
    """An in-memory store that counts the entries it hands out (loads, updates' inputs) and takes in."""

    def __init__(self) -> None:
        super().__init__()
        self.read = self.written = 0

    def load(self, session_id: str) -> SessionState:
        state = super().load(session_id)
        self.read += len(state.entries)
        return state

    def append(self, session_id: str, entries: Sequence[Any]) -> int:
        self.written += len(entries)
        return super().append(session_id, entries)

    def update(self, session_id: str, fn: Update) -> SessionState:
        def counted(state: SessionState) -> SessionState | None:
            self.read += len(state.entries)
            new = fn(state)
            self.written += 0 if new is None else len(new.entries)
            return new

        return super().update(session_id, counted)


def test_a_long_dialogue_under_tool_rounds_reads_and_writes_each_item_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """1,000 messages, the history read before each reply as a replay does: each write takes in its own item and
    reads none back, and each read converts only the items added since the last (each write decoded and re-encoded
    all of them, about 500,000 entries each way, and each read decoded and converted them all: 250,000)."""
    converted = []

    def counted(items: Sequence[Item]) -> list[Message]:
        converted.append(len(items))
        return items_to_messages(items)

    monkeypatch.setattr(history_module, "items_to_messages", counted)
    store = CountingStore()
    history = agent_history("s", store=store, compressor=ToolRoundsCompressor(keep_rounds=3))
    ms = [Message("user" if i % 2 == 0 else "assistant", f"message {i}", id=f"m{i}") for i in range(1000)]
    for n, m in enumerate(ms):
        if m.role == "assistant":
            assert history.messages() == ms[:n]
        history.append(m)
    assert history.messages() == ms
    assert (store.read, store.written, sum(converted)) == (0, len(ms), len(ms))


def test_items_decoded_afresh_are_converted_not_compared(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without `settled_after`, every write is a store update whose result is decoded afresh, so each read gets
    other item objects: they are converted at once, never compared item by item with the last read's (400
    messages: 79,401 comparisons by 1dba453, which cost more than the conversions they saved)."""
    compared = []
    equal = MessageItem.__eq__
    monkeypatch.setattr(MessageItem, "__eq__", lambda a, b: compared.append(1) or equal(a, b))
    history = agent_history("s", store=InMemoryStore(), compressor=Unannounced(ToolRoundsCompressor()))  # type: ignore[arg-type]
    ms = [Message("user" if i % 2 == 0 else "assistant", f"message {i}", id=f"m{i}") for i in range(400)]
    for n, m in enumerate(ms):
        assert history.messages() == ms[:n]
        history.append(m)
    assert compared == []


OPS_READ = st.lists(st.sampled_from(["user", "reply", "calls", "tool", "joined", "read", "replace", "clear"]))


@settings(max_examples=150)
@given(ops=OPS_READ, keep=st.integers(0, 2))
def test_history_reads_are_the_full_conversion_of_the_stored_items(ops: list[str], keep: int) -> None:
    """What `messages()` returns, converting only new items, is `snapshot_messages` of what the store holds, whatever
    was written between two reads: calls joined to the message before them, another writer's items, rewrites."""
    store = InMemoryStore()
    history = agent_history("s", store=store, compressor=ToolRoundsCompressor(keep_rounds=keep))
    other = StoreAgentMemory(store, "s")  # another writer, without a compressor
    for n, op in enumerate(ops):
        if op == "user":
            history.append(Message("user", f"ask {n}", id=f"m{n}"))
        elif op == "reply":
            history.append(Message("assistant", f"reply {n}", id=f"m{n}"))
        elif op == "calls":  # text and two calls, or calls only: one message of several items
            calls = (ToolCall(f"c{n}", "run"), ToolCall(f"d{n}", "run"))
            history.append(Message("assistant", f"let me see {n}" if n % 2 else None, tool_calls=calls, id=f"m{n}"))
        elif op == "tool":
            history.append(Message("tool", f"out {n}", tool_call_id=f"c{n - 1}", id=f"m{n}"))
        elif op == "joined":  # a call that does not say, of the newest assistant message's source
            last = next((m.id for m in reversed(history.messages()) if m.role == "assistant"), None)
            other.add_output_items([FunctionCall(f"e{n}", "run", source_id=last)])
        elif op == "replace":
            history.replace(history.messages()[::2])
        elif op == "clear":
            history.clear()
        if op != "read" and n % 3:
            continue  # several writes between two reads
        assert history.messages() == snapshot_messages(StoreAgentMemory(store, "s").snapshot())


class Unannounced:
    """`inner` without `settled_after`: every write goes through the store's update, as before the shortcut."""

    def __init__(self, inner: ToolRoundsCompressor) -> None:
        self.compress, self.counter = inner.compress, inner.counter


OPS = st.lists(
    st.tuples(st.sampled_from(["user", "reply", "call", "output", "read", "restore", "clear"]), st.integers(0, 1)),
    max_size=40,
)


def _events(events: list[Event]) -> list[tuple[str, dict[str, Any]]]:
    """The events but their timings and the compressor's class name (the reference's is `Unannounced`)."""
    return [(e.kind, {k: v for k, v in e.data.items() if k not in ("latency_us", "compressor")}) for e in events]


@settings(max_examples=150)
@given(ops=OPS, keep=st.integers(0, 2))
def test_tool_rounds_writes_leave_what_the_transaction_of_write_and_compression_leaves(
    ops: list[tuple[str, int]], keep: int
) -> None:
    """Two writers on one session (one write may come between another's read and append), restores and clears:
    each state, each snapshot returned and each event are those of memories whose every write is one update."""
    fast_store, slow_store = InMemoryStore(), InMemoryStore()
    fast = [StoreAgentMemory(fast_store, "s", ToolRoundsCompressor(keep_rounds=keep)) for _ in range(2)]
    slow = [StoreAgentMemory(slow_store, "s", Unannounced(ToolRoundsCompressor(keep_rounds=keep))) for _ in range(2)]  # type: ignore[arg-type]
    calls = 0
    for n, (op, writer) in enumerate(ops):
        items: list[Item] = []
        if op == "call":
            calls += 1
        if op in ("user", "reply", "call", "output"):
            items = [
                {
                    "user": MessageItem("user", f"ask {n}", source_id=f"m{n}"),
                    "reply": MessageItem("assistant", f"reply {n}", source_id=f"m{n}"),
                    "call": FunctionCall(f"c{calls}", "run", source_id=f"m{n}"),
                    "output": FunctionCallOutput(f"c{calls}", f"out {n}", source_id=f"m{n}"),
                }[op]
            ]
        seen = []
        for memory in (fast[writer], slow[writer]):
            with recording() as events:
                if items:
                    memory.add_output_items(items)
                elif op == "restore":
                    memory.restore(MemorySnapshot.of(memory.snapshot().items[::2], "restored"))
                elif op == "clear":
                    memory.clear()
                got = memory.snapshot()
            fresh = StoreAgentMemory(memory.store, "s").snapshot()
            assert got == fresh and memory.get_items() == list(fresh.items) and memory.get_summary() == fresh.summary
            seen.append((fresh, _events(events), len(memory)))
        assert seen[0] == seen[1]
