"""tests/slow_first.py: every listed file exists, and the collection starts with them, in the list's order."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest
from slow_first import SLOWEST, rank, slow_first

ROOT = Path(__file__).resolve().parents[1]


def test_every_listed_file_exists() -> None:
    """A renamed or moved file would silently lose its head start."""
    assert [p for p in SLOWEST if not (ROOT / p.split("::")[0]).is_file()] == []


def test_the_listed_tests_come_first_in_the_lists_order_and_the_rest_keep_theirs() -> None:
    ids = ["tests/a.py::x", f"{SLOWEST[3]}::y", "tests/b.py::z", f"{SLOWEST[0]}::w", f"{SLOWEST[3]}::v"]
    items = [SimpleNamespace(nodeid=i) for i in ids]
    slow_first(items)  # type: ignore[arg-type]
    assert [i.nodeid for i in items] == [ids[3], ids[1], ids[4], ids[0], ids[2]]


def test_this_sessions_collection_is_in_that_order(request: pytest.FixtureRequest) -> None:
    ranks = [rank(item.nodeid) for item in request.session.items]
    assert ranks == sorted(ranks)
