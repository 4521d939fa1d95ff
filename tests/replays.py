"""Replays that tests in several folders read, each run once per pytest process (session fixtures in
tests/conftest.py); the tests that read one carry its xdist group, so that one worker builds it, not both."""

from __future__ import annotations

import pytest

# LoCoMo conv-26 through `longterm=locomo` (extraction, index, its pipeline of stages), its answers scored: the
# registry's long-term run (tests/metrics/test_registry.py), the retrieval files' (tests/longterm/test_retrievals.py).
CONV26_LONGTERM = ("dataset=locomo", "dataset.sample_ids=[conv-26]", "longterm=locomo", "eval.answers=true")
CONV26_LONGTERM_GROUP = pytest.mark.xdist_group("conv26_longterm")
