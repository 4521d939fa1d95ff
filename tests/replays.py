"""Replays that tests in several modules read, each run once per pytest process (`shared_run` in tests/conftest.py).

The tests that read them carry `SHARED_RUNS_GROUP`, so that one xdist worker runs them, not each worker.
"""

from __future__ import annotations

import pytest

# The tests that read these runs read no figure (tests/report draws and checks them): the report without them.
NO_FIGURES = "report.plots=false"
# LoCoMo conv-26 through `longterm=locomo` (extraction, index, its pipeline of stages), its answers scored: the
# registry's long-term run (tests/metrics/test_registry.py), the retrieval files' (tests/longterm/test_retrievals.py).
CONV26_LONGTERM = (
    "dataset=locomo",
    "dataset.sample_ids=[conv-26]",
    "longterm=locomo",
    "eval.answers=true",
    NO_FIGURES,
)
# The decoys of datasets/updates/misfire_dev.json and the generator's updated facts: the registry's update and
# decoy metrics, and their recount (tests/metrics/test_update_metrics.py).
MISFIRE_DEV = ("dataset=locomo", "dataset.path=datasets/updates/misfire_dev.json", "longterm=locomo", NO_FIGURES)
SYNTHETIC_UPDATES = (
    "dataset.seed=21",
    "dataset.dialogues=4",
    "dataset.update_rate=0.5",
    "longterm=chat",
    "agent_id=chat",
    NO_FIGURES,
)
SHARED_RUNS_GROUP = pytest.mark.xdist_group("shared_runs")
