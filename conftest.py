"""Doctest collection of memlab/ (`--doctest-modules`): what it leaves out, and why.

- a module whose examples drive an optional extra's library is skipped, naming the extra, when it is missing.
"""

from __future__ import annotations

import importlib.util

import pytest
from _pytest.doctest import DoctestItem

# Module -> the library of an optional extra that its examples drive, and the extra.
EXTRA_LIBRARIES = {
    "memlab.context.peers.autogen": ("autogen_core", "peers"),
    "memlab.context.peers.langchain": ("langchain_core", "peers"),
    "memlab.context.peers.llamaindex": ("llama_index", "peers"),
}


def _needs(name: str) -> tuple[str, str] | None:
    """The (library, extra) the examples named `name` (module.qualname) drive, if any."""
    return next((v for m, v in EXTRA_LIBRARIES.items() if name == m or name.startswith(m + ".")), None)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        need = _needs(item.dtest.name) if isinstance(item, DoctestItem) and item.dtest is not None else None
        if need is not None and importlib.util.find_spec(need[0]) is None:
            item.add_marker(pytest.mark.skip(reason=f"needs {need[0]}: pip install 'memlab[{need[1]}]'"))
