"""The tests known to take longest go first, so that under pytest-xdist none starts last and runs on alone.

pytest-xdist's `--dist loadgroup` hands tests out in collection order, a few at a time to whichever worker is
free (a group, all its tests on one worker, goes before single tests). A test of a minute collected near the end
leaves the other worker idle for that minute; started first, it overlaps with the many short ones.
"""

from __future__ import annotations

import pytest

# Node-id prefixes (a file keeps its tests together, so module fixtures are built once), slowest first: the
# `--durations` of the merged suite on the idle machine and of `pytest -n 2 --dist loadgroup --durations=80` over
# the end-to-end files at load 20-30 (docs/speed.md, "The test suite"). Groups (xdist_group) need no entry: xdist
# starts them before single tests. A test not listed keeps its place after these; a renamed file fails
# tests/test_slow_first.py.
SLOWEST = (
    "tests/longterm/test_updates.py",  # the newer-fact ranking replays 18 synthetic seeds
    "tests/report/test_demo.py",
    "tests/metrics/test_registry.py",  # the registry's LoCoMo conv-26 run (module fixture)
    "tests/longterm/test_locomo_recall.py",
    "tests/test_extending.py",
    "tests/report/test_sweeps.py",
    "tests/report/test_ci_baseline.py",
    "tests/eval/test_eval_scripts.py",
    "tests/runtime/test_resume.py",
    "tests/report/test_health.py",
    "tests/report/test_comparison_render.py",
    "tests/llm/test_strict_provider.py",
    "tests/context/test_peers.py",
    "tests/report/test_publish.py",
)


def rank(nodeid: str) -> int:
    """The position of `nodeid`'s prefix in `SLOWEST`, or `len(SLOWEST)` for a test not listed."""
    return next((i for i, prefix in enumerate(SLOWEST) if nodeid.startswith(prefix)), len(SLOWEST))


def slow_first(items: list[pytest.Item]) -> None:
    """Reorder `items` in place: the listed tests first, in the list's order; the rest keep collection order."""
    items.sort(key=lambda item: rank(item.nodeid))  # stable: ties keep their collection order
