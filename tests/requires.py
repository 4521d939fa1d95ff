"""`require`: skip a test module whose optional libraries are not installed, without importing them."""

from __future__ import annotations

import importlib.util

import pytest


def require(*libraries: str, extra: str = "peers") -> None:
    """Skip the calling test module, naming the first missing library, unless all of `libraries` are installed.

    Found with `importlib.util.find_spec`, not imported (what `pytest.importorskip` does): importing llama-index,
    mem0 or langgraph costs seconds of CPU that every xdist worker would pay while collecting, for tests that run
    on one of them and import the libraries when they build a peer.
    """
    for library in libraries:
        if importlib.util.find_spec(library) is None:
            pytest.skip(f"{library} is not installed: pip install 'memlab[{extra}]'", allow_module_level=True)
