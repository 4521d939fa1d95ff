"""The examples in the memory and store modules' docstrings run and hold."""

from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = [
    "memlab.memory.agent",
    "memlab.memory.codec",
    "memlab.memory.session",
    "memlab.memory.strategies",
    "memlab.memory.tasks",
    "memlab.stores.base",
    "memlab.stores.memories",
]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name: str) -> None:
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0
