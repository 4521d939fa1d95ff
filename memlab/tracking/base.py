"""What a logger is handed of a finished run, the no-op logger, and the file lock loggers share."""

from __future__ import annotations

import fcntl
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class FinishedRun:
    """A published run as loggers see it: where it is, what it was, what it measured.

    Args:
        run_dir: The published run folder.
        name: The run's name.
        finished_at: When it was published.
        overrides: Its overrides.
        metrics: metrics.json.
        config: The resolved config.
        manifest: manifest.json.
        files: The folder's files, relative to it.
    """

    run_dir: Path
    name: str
    finished_at: datetime
    overrides: tuple[str, ...]
    metrics: Mapping[str, Any]  # metrics.json, value for value
    config: Mapping[str, Any]  # the resolved config (config.yaml)
    manifest: Mapping[str, Any]  # seed, tags, git revision, versions (manifest.json)
    files: tuple[str, ...]  # the files published in `run_dir`, reports included


class RunLogger:
    """`logger=none`: records nothing. Other loggers override `log_run`."""

    def log_run(self, run: FinishedRun) -> None:
        """Record one finished run (called once per run, and per job of a sweep)."""

    @classmethod
    def check_installed(cls) -> None:
        """`MissingExtraError` if the library the logger writes through is missing (a sweep asks before its jobs)."""


def now() -> datetime:
    """The local time with its UTC offset (a run's `finished_at`)."""
    return datetime.now().astimezone()


def record_run(logger: RunLogger, run: FinishedRun) -> None:
    """Hand a published run to `logger`; one that fails warns on stderr (the run folder is complete either way).

    Args:
        logger: Where the run is recorded.
        run: The published run.
    """
    try:
        logger.log_run(run)
    except Exception as e:
        print(f"memlab: WARNING: logger {type(logger).__name__} did not record {run.run_dir}: {e}", file=sys.stderr)


@contextmanager
def file_lock(target: Path) -> Iterator[None]:
    """Hold an exclusive lock on ``<target>.lock`` (made if missing): one writer at a time across processes."""
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target.with_name(target.name + ".lock"), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
