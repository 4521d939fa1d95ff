"""The `openai_server` fixture: a local OpenAI-compatible server per test (see openai_server.py)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from openai_server import OpenAIServer, serve


@pytest.fixture
def openai_server() -> Iterator[OpenAIServer]:
    with serve() as server:
        yield server
