"""`logger=csv`: one row per finished run appended to a CSV file (run dir, name, time, overrides, every metric).

Rows from the jobs of a sweep, in one process or several (joblib), never interleave: each writer
holds ``<path>.lock`` and appends its row with one ``O_APPEND`` write. A run with a metric the
header lacks rewrites the file (beside it, then one rename) with the new column added at the end,
earlier rows left empty there; so every row stays one run and every column one metric.
"""

from __future__ import annotations

import csv
import io
import json
import os
import secrets
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from memlab.tracking.base import FinishedRun, RunLogger, file_lock

RUN_COLUMNS = ("run_dir", "name", "time", "overrides")
DEFAULT_PATH = "reports/runs.csv"


class CsvLogger(RunLogger):
    """Appends one row per finished run to `path` (made with its header if missing).

    Parameters: the fields of `memlab.tracking.schemas.CsvLoggerConfig`, each documented there once.
    """

    def __init__(self, path: str = DEFAULT_PATH) -> None:
        self.path = Path(path)

    def log_run(self, run: FinishedRun) -> None:
        row = {
            "run_dir": str(run.run_dir),
            "name": run.name,
            "time": run.finished_at.isoformat(timespec="seconds"),
            "overrides": " ".join(run.overrides),
            **{name: _cell(value) for name, value in run.metrics.items()},
        }
        with file_lock(self.path):
            header = _header(self.path)
            added = sorted(name for name in run.metrics if name not in header)
            if header and not added:
                _append(self.path, _line([row.get(column, "") for column in header]))
            else:
                _rewrite(self.path, [*(header or RUN_COLUMNS), *added], row)


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str | int | float):
        return str(value)
    return json.dumps(value, sort_keys=True)


def _header(path: Path) -> list[str]:
    if not path.is_file():
        return []
    with open(path, newline="", encoding="utf-8") as f:
        return next(csv.reader(f), [])


def _line(values: Sequence[str | None]) -> str:
    text = io.StringIO()
    csv.writer(text, lineterminator="\n").writerow(values)
    return text.getvalue()


def _append(path: Path, line: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_APPEND)
    try:
        os.write(fd, line.encode("utf-8"))
    finally:
        os.close(fd)


def _rewrite(path: Path, header: Sequence[str], row: Mapping[str, str]) -> None:
    """The file with `header` (the old one plus new columns at the end), its old rows, and `row` last."""
    old: list[dict[str, str]] = []
    if path.is_file():
        with open(path, newline="", encoding="utf-8") as f:
            old = list(csv.DictReader(f))
    staged = path.parent / f".{path.name}.{secrets.token_hex(8)}"
    # not `mkstemp`, whose 0600 the rename would give the table: the umask's modes, or the old table's
    fd = os.open(staged, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        if path.is_file():
            os.fchmod(fd, path.stat().st_mode & 0o7777)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(_line(header))
            for previous in [*old, row]:
                f.write(_line([previous.get(column) or "" for column in header]))
            f.flush()
            os.fsync(f.fileno())
        os.replace(staged, path)
    except BaseException:  # the table not replaced (a folder there, a full disk): no staged copy left beside it
        Path(staged).unlink(missing_ok=True)
        raise
