"""Every conf/store entry keeps the SessionStore contract on its own isolated database (see conftest.py).

The entries are read from the config repository, so a new conf/store/<name>.yaml is tested here with no
edit but its isolated database in conftest.py (`ISOLATORS`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from entries import options

from memlab.experiment import instantiate
from memlab.stores import SessionState, SessionStore
from memlab.stores.base import encode

CHINESE = "航班 SK4411 改签 ✈️"
ASKED, ANSWERED = {"role": "user", "content": CHINESE}, {"role": "assistant", "content": "ok"}


@pytest.mark.parametrize("name", options("store"))
def test_store_entry_keeps_the_session_contract(make_config: Any, isolate: Any, tmp_path: Path, name: str) -> None:
    with isolate(name, tmp_path) as backend:
        assert backend.overrides[0] == f"store={name}"
        store = instantiate(make_config(*backend.overrides).store)
        backend.opened.append(store)
        assert isinstance(store, SessionStore)
        assert store.load("s1") == SessionState() and not store.exists("s1")
        store.append("s1", [ASKED, ANSWERED])
        store.append("s2", [{"role": "user", "content": "other"}])
        assert store.load("s1").entries == (
            {"role": "user", "content": CHINESE},
            {"role": "assistant", "content": "ok"},
        )
        after = store.update(
            "s1", lambda s: SessionState(s.entries[1:], summary=f"summary of {s.entries[0]['content']}")
        )
        assert after == SessionState((ANSWERED,), f"summary of {CHINESE}")
        assert store.load("s1") == after and store.count("s1") == 1
        assert store.sessions() == ["s1", "s2"]
        store.delete_session("s1")
        assert not store.exists("s1") and store.sessions() == ["s2"]


@pytest.mark.parametrize("name", options("store"))
def test_every_store_entry_decides_unchanged_on_the_stored_json(
    make_config: Any, isolate: Any, tmp_path: Path, name: str
) -> None:
    """1 and 1.0, True and 1 are equal in Python but not as JSON: an update to the other one is a change everywhere."""
    with isolate(name, tmp_path) as backend:
        store = instantiate(make_config(*backend.overrides).store)
        backend.opened.append(store)
        store.append("s", [{"n": 1, "flag": True}])
        after = store.update("s", lambda s: SessionState(({"n": 1.0, "flag": 1},), s.summary))
        assert [encode(e) for e in after.entries] == [encode(e) for e in store.load("s").entries]
        assert [encode(e) for e in store.load("s").entries] == ['{"flag":1,"n":1.0}']
