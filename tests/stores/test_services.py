"""An unreachable service skips its tests with a message naming it, or fails them under MEMLAB_REQUIRE_SERVICES=1."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

CLOSED = {
    "postgres": ("postgresql+psycopg://postgres@127.0.0.1:1/test", "PostgreSQL is unreachable at"),
    "mariadb": ("mysql+pymysql://root@127.0.0.1:1/test", "MariaDB/MySQL is unreachable at"),
    "redis": ("redis://127.0.0.1:1/0", "Redis is unreachable at"),
}


@pytest.mark.parametrize("name", sorted(CLOSED))
def test_unreachable_service_skips_or_fails(
    isolate: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    url, message = CLOSED[name]
    monkeypatch.delenv("MEMLAB_REQUIRE_SERVICES", raising=False)
    with pytest.raises(pytest.skip.Exception, match=message), isolate(name, tmp_path, url):
        pass
    monkeypatch.setenv("MEMLAB_REQUIRE_SERVICES", "1")
    with (
        pytest.raises(pytest.fail.Exception, match="MEMLAB_REQUIRE_SERVICES=1 requires it"),
        isolate(name, tmp_path, url),
    ):
        pass


@pytest.mark.parametrize("name", sorted(CLOSED))
def test_a_store_on_an_unreachable_server_is_a_user_error(name: str) -> None:
    from memlab.errors import MemlabError
    from memlab.stores import RedisStore, SqlStore

    url = CLOSED[name][0]
    store = RedisStore(url=url) if name == "redis" else SqlStore(url=url)
    with pytest.raises(MemlabError, match=r"store\.url: cannot (use|reach)"):
        store.load("s")
