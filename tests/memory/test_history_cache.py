"""StoreChatMemory keeps the decoded history in memory: what it returns is always what the store holds."""

from __future__ import annotations

from datetime import datetime

import pytest

from memlab.memory import InMemoryChatMemory, StoreChatMemory
from memlab.messages import Message, ToolCall
from memlab.stores import InMemoryStore, SqlStore
from memlab.tokens import HistoryView, get_counter


def _fresh(store) -> list[Message]:
    """The history read straight from the store by a new reader (no cache)."""
    return StoreChatMemory(store, "s").messages()


@pytest.mark.parametrize("backend", ["memory", "sqlite"])
def test_cached_history_matches_the_store_through_every_write(backend: str, tmp_path) -> None:
    store = InMemoryStore() if backend == "memory" else SqlStore(path=str(tmp_path / "chat.db"))
    chat, other = StoreChatMemory(store, "s"), StoreChatMemory(store, "s")
    chat.append(Message(role="user", content="hi", id="1", speaker="Ann", timestamp=datetime(2023, 5, 7, 13, 56)))
    assert chat.messages() == _fresh(store)
    chat.append(Message(role="assistant", tool_calls=(ToolCall("t1", "lookup", '{"q": 1}'),), id="2"))
    chat.append(Message(role="tool", content="out", tool_call_id="t1"))
    assert chat.messages() == _fresh(store) and len(chat.messages()) == 3
    other.append(Message(role="user", content="from another writer"))
    assert chat.messages() == _fresh(store) and chat.messages()[-1].content == "from another writer"
    chat.update(lambda ms: ms[1:])
    assert chat.messages() == _fresh(store) and len(chat.messages()) == 3
    chat.replace([Message(role="system", content="summary")])
    assert chat.messages() == _fresh(store) == [Message(role="system", content="summary")]
    chat.clear()
    assert chat.messages() == _fresh(store) == []


def test_a_failed_update_leaves_the_cached_history_untouched() -> None:
    store = InMemoryStore()
    chat = StoreChatMemory(store, "s")
    chat.append(Message(role="user", content="keep me"))

    def fail(_messages: list[Message]) -> list[Message]:
        raise RuntimeError("edit failed")

    with pytest.raises(RuntimeError):
        chat.update(fail)
    assert chat.messages() == _fresh(store) == [Message(role="user", content="keep me")]


@pytest.mark.parametrize(
    "make", [lambda: StoreChatMemory(InMemoryStore(), "s"), InMemoryChatMemory], ids=["store", "list"]
)
def test_returned_views_are_read_only_and_keep_what_they_showed(make) -> None:
    """`messages()` is a view of the history's list, not a copy: later writes of any kind leave it as it was."""
    chat = make()
    a, b, c = (Message(role="user", content=t) for t in "abc")
    chat.append(a)
    before = chat.messages()
    assert not hasattr(before, "append") and not hasattr(before, "__setitem__")
    chat.append(b)
    assert list(before) == [a] and len(before) == 1 and before[-1] == a and before[1:] == []
    assert list(chat.messages()) == [a, b]
    after_append = chat.messages()
    chat.replace([c])
    chat.update(lambda ms: [*ms, a])
    assert list(before) == [a] and list(after_append) == [a, b] and list(chat.messages()) == [c, a]


def test_the_store_is_read_once_while_this_object_is_the_only_writer() -> None:
    store = InMemoryStore()
    loads = []
    load = store.load
    store.load = lambda session_id: loads.append(session_id) or load(session_id)  # type: ignore[method-assign]
    chat = StoreChatMemory(store, "s")
    for i in range(50):
        chat.append(Message(role="user", content=f"m{i}"))
        assert len(chat.messages()) == i + 1
    assert loads == ["s"]


@pytest.mark.parametrize("history", ["store", "in_memory"])
def test_the_running_token_total_is_the_sum_of_counts_through_every_write(history: str) -> None:
    """`HistoryView.tokens` (what the interceptor reports as tokens_in) always equals counting afresh."""
    store = InMemoryStore()
    chat = StoreChatMemory(store, "s") if history == "store" else InMemoryChatMemory()
    counters = [get_counter("estimate"), get_counter("cl100k_base")]

    def check() -> None:
        snapshot = chat.messages()
        assert isinstance(snapshot, HistoryView)
        for counter in counters:
            assert snapshot.tokens(counter) == sum(map(counter.count, snapshot))

    for i in range(5):
        chat.append(Message(role="user", content=f"message {i} " * (i + 1)))
        check()
    old = chat.messages()
    chat.update(lambda ms: ms[2:])
    check()
    assert old.tokens(counters[1]) == sum(map(counters[1].count, old))  # taken before the update: counted afresh
    if history == "store":
        StoreChatMemory(store, "s").append(Message(role="user", content="from another writer"))
        check()
    chat.replace([Message(role="system", content="summary")])
    check()
    shorter = chat.messages()
    chat.append(Message(role="user", content="appended after the view was taken"))
    check()  # the tally now covers more messages than `shorter` shows
    assert shorter.tokens(counters[0]) == sum(map(counters[0].count, shorter)) and len(shorter) == 1
    chat.clear()
    check()
