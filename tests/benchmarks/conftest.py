"""Fixtures of the benchmarks: `timing` for a pure timing run, which `make test` (benchmarks disabled) skips."""

from __future__ import annotations

from typing import Any

import pytest


@pytest.fixture
def timing(benchmark: Any) -> Any:
    """pytest-benchmark's `benchmark`, for a test that only times: skipped unless `--benchmark-enable` (make bench)."""
    if benchmark.disabled:
        pytest.skip("a timing run: make bench")
    return benchmark
