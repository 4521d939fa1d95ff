"""A CSV logger's writer for tests/tracking's race test, in a module a spawned process can import by name.

Under `--import-mode=importlib` a test module is named by its path (tests.tracking.test_loggers), which a
spawned child, whose sys.path is the parent's, cannot import; tests/ is on `pythonpath`, so this module is.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from memlab.tracking import CsvLogger, FinishedRun


def log_runs(path: str, indices: range, start: Any) -> None:
    start.wait()  # every writer starts at once
    for index in indices:
        # Every fifth run brings a metric of its own, so appends race with header rewrites.
        extra = {f"extra.{index}": 1.0} if index % 5 == 0 else {}
        metrics = {"calls": index, "tokens.prompt.mean": index / 3, **extra}
        when = datetime.now(UTC)
        CsvLogger(path).log_run(
            FinishedRun(Path(f"/runs/{index}"), "race", when, (f"seed={index}",), metrics, {}, {}, ())
        )
