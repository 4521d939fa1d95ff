"""The docstring examples of the metrics and report modules run and hold."""

from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = [
    "memlab.metrics.answers",
    "memlab.metrics.events",
    "memlab.metrics.latency",
    "memlab.metrics.pricing",
    "memlab.metrics.retention",
    "memlab.metrics.summaries",
    "memlab.metrics.tokens",
    "memlab.metrics.tool_orphans",
    "memlab.report.comparison",
    "memlab.report.fmt",
    "memlab.report.html",
]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name: str) -> None:
    result = doctest.testmod(importlib.import_module(name))
    assert result.attempted > 0 and result.failed == 0
