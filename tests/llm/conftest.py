"""The `openai_server` fixture: a local OpenAI-compatible server per test (see openai_server.py).

A test fails if the server refused a request as OpenAI would; one that sends a refused request on purpose
empties `openai_server.rejected` after checking it.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from openai_server import OpenAIServer, serve


@pytest.fixture
def openai_server() -> Iterator[OpenAIServer]:
    with serve() as server:
        yield server
    assert server.rejected == [], f"requests OpenAI would refuse: {server.rejected}"
