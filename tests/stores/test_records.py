"""The namespaced JSON records long-term memory keeps: upserts, prefix search that never crosses a
namespace, archiving, timestamps; the same on every backend that has them."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

import pytest

from memlab.stores import ns_text

if TYPE_CHECKING:
    from tests.stores.conftest import Backend

NS = ["agent:chat", "user:42", "memories"]
T0 = datetime(2024, 1, 1, 12, 0, 0, 123456, tzinfo=UTC)


def test_upsert_keeps_created_at_and_archived(kv_backend: Backend) -> None:
    store = kv_backend.open()
    store.put(NS, "m1", {"content": "用户是后端Java开发者", "source": "auto_extract"}, now=T0)
    store.set_archived(NS, "m1", now=T0)
    store.put(NS, "m1", {"content": "uses Spring Boot"}, now=T0 + timedelta(days=3))
    got = kv_backend.open().get(NS, "m1")
    assert got is not None and got.value == {"content": "uses Spring Boot"}
    assert got.created_at == T0 and got.updated_at == T0 + timedelta(days=3) and got.archived
    assert store.get(NS, "absent") is None and store.get(["agent:chat"], "m1") is None


def test_search_by_prefix_never_crosses_a_namespace(kv_backend: Backend) -> None:
    store = kv_backend.open()
    spaces = [
        NS,
        ["agent:chat", "user:420", "memories"],
        ["agent:chat", "user:4"],
        ["Agent:chat", "user:42", "memories"],
        ["agent:chat", "user:42"],
        ["agent:code", "user:42", "memories"],
        ["agent:%", "user:_"],
        ['agent:"q"', "用户:四十二"],
    ]
    for i, ns in enumerate(spaces):
        store.put(ns, f"k{i}", {"i": i}, now=T0)
        store.put(ns, "a", {"i": -i}, now=T0)
    by = lambda prefix: [(r.namespace, r.key) for r in store.search(prefix)]  # noqa: E731
    below = [(tuple(NS), "a"), (tuple(NS), "k0"), (("agent:chat", "user:42"), "a"), (("agent:chat", "user:42"), "k4")]
    assert by(["agent:chat", "user:42"]) == below  # ordered by the stored namespace text, then key
    assert by(NS) == [(tuple(NS), "a"), (tuple(NS), "k0")]
    assert by(["agent:%"]) == [(("agent:%", "user:_"), "a"), (("agent:%", "user:_"), "k6")]  # no LIKE wildcard
    assert by(['agent:"q"', "用户:四十二"])[1] == (('agent:"q"', "用户:四十二"), "k7")
    everything = store.search()
    assert len(everything) == 2 * len(spaces)
    assert [(ns_text(r.namespace), r.key) for r in everything] == sorted(
        (ns_text(r.namespace), r.key) for r in everything
    )


def test_archive_restore_delete(kv_backend: Backend) -> None:
    store = kv_backend.open()
    for k in ("a", "b", "c"):
        store.put(NS, k, {"k": k}, now=T0)
    assert store.set_archived(NS, "b", now=T0 + timedelta(days=90))
    assert [r.key for r in store.search(NS)] == ["a", "c"]
    assert [(r.key, r.archived) for r in store.search(NS, include_archived=True)] == [
        ("a", False),
        ("b", True),
        ("c", False),
    ]
    assert store.set_archived(NS, "b", archived=False) and [r.key for r in store.search(NS)] == ["a", "b", "c"]
    assert store.delete(NS, "a") and not store.delete(NS, "a") and not store.set_archived(NS, "a")
    assert [r.key for r in store.search(NS)] == ["b", "c"]


def test_naive_times_are_utc_and_limits_are_checked(kv_backend: Backend) -> None:
    store = kv_backend.open()
    store.put(NS, "t", {}, now=datetime(2024, 5, 1, 8, 30))
    record = store.get(NS, "t")
    assert record is not None and record.created_at == datetime(2024, 5, 1, 8, 30, tzinfo=UTC)
    store.put(NS, "k" * 255, {"ok": True})
    with pytest.raises(ValueError, match="255"):
        store.put(NS, "k" * 256, {})
    with pytest.raises(ValueError, match="at most 255"):
        store.put(["x" * 300], "k", {})
    with pytest.raises(TypeError, match="JSON object"):
        store.put(NS, "k", ["not", "a", "dict"])  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="list of strings"):
        store.put("agent:chat", "k", {})  # type: ignore[arg-type]


def test_concurrent_upserts(kv_backend: Backend) -> None:
    store = kv_backend.open()
    errors: list[BaseException] = []

    def writer(w: int) -> None:
        try:
            for i in range(15):
                store.put(NS, f"key{i % 5}", {"writer": w, "i": i})
                store.search(NS)
        except BaseException as e:
            errors.append(e)

    threads = [threading.Thread(target=writer, args=(w,)) for w in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors, errors
    assert [r.key for r in store.search(NS)] == [f"key{i}" for i in range(5)]
