"""The tests known to take longest go first, so that under pytest-xdist none starts last and runs on alone.

pytest-xdist's `--dist loadgroup` hands tests out in collection order, a few at a time to whichever worker is
free (a group, all its tests on one worker, goes before single tests). A test of a minute collected near the end
leaves the other worker idle for that minute; started first, it overlaps with the many short ones.
"""

from __future__ import annotations

import pytest

# Node-id prefixes (a file keeps its tests together, so module fixtures are built once), by their slowest test,
# longest first: a whole-suite run (`pytest -n 2 --dist loadgroup --junitxml`, 1,711 tests, Dec 6 01:05-01:48 UTC
# at load 15-34; docs/speed.md, "The test suite"), files whose slowest test took 20 s or more there. Groups
# (xdist_group) need no entry: xdist starts them before single tests. A test not listed keeps its place after
# these; a renamed file fails tests/test_slow_first.py.
SLOWEST = (
    "tests/test_ranges.py",  # every entry composed, every ranged field pushed out of range: one test
    "tests/test_docs_commands.py",
    "tests/runtime/test_resume.py",
    "tests/longterm/test_update_eval.py",
    "tests/test_text.py",
    "tests/stores/test_resume_killed.py",
    "tests/tracking/test_loggers.py",
    "tests/stores/test_run_isolation.py",
    "tests/sim/test_parallel_replay.py",
    "tests/sim/test_fork_after_torch.py",  # added Dec 6: a MiniLM sweep in a child process (13 CPU s since suite-misc)
    "tests/metrics/test_answer_scorers.py",
    "tests/sim/test_bounded_memory.py",
    "tests/report/test_ci_baseline.py",
    "tests/longterm/test_updates.py",  # the newer-fact ranking replays 18 synthetic seeds
    "tests/test_extending.py",
    "tests/report/test_health.py",
    "tests/peers/test_heldout.py",
    "tests/eval/test_summary_quality.py",
    "tests/report/test_comparison_render.py",
    "tests/longterm/test_identity.py",
    "tests/test_completion.py",
    "tests/test_experiments.py",
    "tests/metrics/test_longterm_runs.py",
    "tests/report/test_demo.py",
    "tests/peers/test_longterm_peers.py",
    "tests/runtime/test_react_loop.py",
    "tests/test_config.py",
    "tests/eval/test_eval_scripts.py",
)


def rank(nodeid: str) -> int:
    """The position of `nodeid`'s prefix in `SLOWEST`, or `len(SLOWEST)` for a test not listed."""
    return next((i for i, prefix in enumerate(SLOWEST) if nodeid.startswith(prefix)), len(SLOWEST))


def slow_first(items: list[pytest.Item]) -> None:
    """Reorder `items` in place: the listed tests first, in the list's order; the rest keep collection order."""
    items.sort(key=lambda item: rank(item.nodeid))  # stable: ties keep their collection order
