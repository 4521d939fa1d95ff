"""Fixtures: run directories written by the real simulator and run-directory code (simulated_runs.py)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from simulated_runs import write_run

from memlab.report import write_error


@pytest.fixture
def make_run() -> Callable[..., Path]:
    return write_run


@pytest.fixture(scope="session")
def sweep_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A sweep of four configurations and one failed job, as the CLI lays it out (shared: copy to edit)."""
    root = tmp_path_factory.mktemp("sweep")
    for i, (keep, summarize) in enumerate([(0, False), (6, False), (12, False), (6, True)]):
        write_run(
            root / str(i),
            keep=keep,
            summarize=summarize,
            overrides=[f"context.keep={keep}", f"context.summarize={summarize}"],
        )
    write_error(
        root / "4", FileNotFoundError("no such file: /nonexistent.json"), ["context.keep=99", "context.summarize=False"]
    )
    return root
