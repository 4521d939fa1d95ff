"""Fixtures: run directories written by the real simulator and run-directory code (simulated_runs.py)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from simulated_runs import write_run

from memlab.naming import job_name
from memlab.report import write_error


@pytest.fixture
def make_run() -> Callable[..., Path]:
    return write_run


@pytest.fixture(scope="session")
def sweep_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A sweep of four configurations and one failed job, as the CLI lays it out (shared: copy to edit)."""
    root = tmp_path_factory.mktemp("sweep")
    for i, (keep, summarize) in enumerate([(0, False), (6, False), (12, False), (6, True)]):
        overrides = [f"context.keep={keep}", f"context.summarize={summarize}"]
        write_run(root / f"{i}_{job_name(overrides)}", keep=keep, summarize=summarize, overrides=overrides)
    failed = ["context.keep=99", "context.summarize=False"]
    write_error(root / f"4_{job_name(failed)}", FileNotFoundError("no such file: /nonexistent.json"), failed)
    return root
