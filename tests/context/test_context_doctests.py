"""The examples in the context modules' docstrings run and say what they show."""

from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = ["trim", "sliding_window", "composite", "hook", "peers.langchain", "peers.autogen"]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name: str) -> None:
    module = importlib.import_module(f"memlab.context.{name}")
    result = doctest.testmod(module)
    assert result.attempted > 0 and result.failed == 0
