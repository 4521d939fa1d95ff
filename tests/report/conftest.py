"""Fixtures: run directories written by the real simulator and run-directory code (simulated_runs.py)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from simulated_runs import write_run

from memlab.naming import job_name
from memlab.report import write_error

if TYPE_CHECKING:
    from matplotlib.figure import Figure


@pytest.fixture
def make_run() -> Callable[..., Path]:
    return write_run


@pytest.fixture
def drawn_figures(monkeypatch: pytest.MonkeyPatch) -> Callable[[], list[Figure]]:
    """`figures = drawn_figures()`: the figures the report code draws from then on, kept for their axes when
    `plots.to_png` has turned them into PNG bytes (those of the runs written before are not wanted)."""
    from memlab.report import plots  # matplotlib: loaded only by the tests that draw

    recording: list[list[Figure]] = []
    to_png = plots.to_png

    def kept(fig: Figure) -> bytes:
        if recording:
            recording[-1].append(fig)
        return to_png(fig)

    def start() -> list[Figure]:
        recording.append([])
        return recording[-1]

    monkeypatch.setattr(plots, "to_png", kept)
    return start


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
