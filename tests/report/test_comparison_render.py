"""The README's sweep, three strategies x two budgets through `context.max_tokens`: six rows, legible plots."""

from __future__ import annotations

import base64
import io
import re
import shutil
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from chromium import assert_rendered, overflowing, screenshot
from matplotlib import image

ROOT = Path(__file__).resolve().parents[2]

SPINE = np.array([0x9A, 0xA4, 0xB2]) / 255  # plots.py's axes edge colour


def _figures(page: str) -> list[np.ndarray]:
    return [
        image.imread(io.BytesIO(base64.b64decode(data)), format="png")
        for data in re.findall(r'src="data:image/png;base64,([^"]+)"', page)
    ]


def _axes_width_share(pixels: np.ndarray) -> float:
    """The longest horizontal run of the axes' edge colour (a bottom spine), as a share of the figure's width."""
    close = (np.abs(pixels[..., :3] - SPINE) < 0.04).all(axis=2)
    best = 0
    for row in close:
        padded = np.concatenate([[0], row.astype(np.int8), [0]])
        edges = np.flatnonzero(np.diff(padded))
        if edges.size:
            best = max(best, int((edges[1::2] - edges[::2]).max()))
    return best / pixels.shape[1]


def test_three_strategies_by_two_budgets_compare_in_six_legible_rows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, memlab_cli: Callable[..., int]
) -> None:
    sweep = tmp_path / "sweep"
    monkeypatch.setenv("CI", "1")
    monkeypatch.chdir(tmp_path)
    args = [
        "run", "-m", "context=trim,sliding_window,composite", "context.max_tokens=1000,4000",
        "debug=default", "report.plots=true", "sim.max_dialogues=2", "sim.max_sessions=3", f"hydra.sweep.dir={sweep}",
    ]  # fmt: skip
    assert memlab_cli(*args) == 0  # in this process: its stderr is in the captured output

    table = pd.read_csv(sweep / "comparison.csv")
    assert len(table) == 6 and (table["status"] == "ok").all(), table[["label", "error"]]
    # one column per swept parameter; TRIM has no token budget and says so
    assert table["param.context"].tolist() == ["trim"] * 2 + ["sliding_window"] * 2 + ["composite"] * 2
    assert table["param.context.max_tokens"].tolist() == [1000, 4000] * 3
    assert table["ignored"].fillna("").tolist() == ["context.max_tokens"] * 2 + [""] * 4
    trim = table[table["param.context"] == "trim"].drop(columns=["label", "param.context.max_tokens", "run_dir"])
    trim = trim.drop(columns=[c for c in trim if c.startswith("latency.")])
    assert trim.iloc[0].equals(trim.iloc[1])  # the budget changed nothing for TRIM
    window = table[table["param.context"] == "sliding_window"].set_index("param.context.max_tokens")
    assert window.loc[1000, "tokens.prompt.mean"] < window.loc[4000, "tokens.prompt.mean"]

    md = (sweep / "comparison.md").read_text()
    assert "## What this shows" in md and "context.max_tokens from 1000 to 4000 changed nothing for trim" in md
    assert "## Metrics" in md and "`tokens.prompt.mean`" in md

    page = (sweep / "comparison.html").read_text()
    figures = _figures(page)
    assert len(figures) >= 3  # Pareto, prompt curves, latency
    for pixels in figures:
        assert _axes_width_share(pixels) > 0.5, "a plot is squeezed by its labels or legend"
    assert_rendered(screenshot(sweep / "comparison.html", tmp_path / "comparison.png"))


def test_a_sweep_of_runs_without_plots_draws_no_figures(tmp_path: Path, memlab_cli: Callable[..., int]) -> None:
    """`debug=default` sets report.plots=false: the comparison page says so instead of drawing (a third of a sweep's
    CPU went to figures nobody asked for)."""
    sweep = tmp_path / "sweep"
    assert memlab_cli("run", "-m", "debug=default", "context=trim,sliding_window", f"hydra.sweep.dir={sweep}") == 0
    page = (sweep / "comparison.html").read_text()
    assert not _figures(page) and "report.plots=false" in page
    assert len(pd.read_csv(sweep / "comparison.csv")) == 2


def test_a_long_value_in_a_label_stays_inside_its_card(tmp_path: Path, memlab_cli: Callable[..., int]) -> None:
    """The defect: a swept path (one unbroken word) ran out of the "fewest tokens" card's note."""
    folder = tmp_path / ("data_of_a_team_with_a_long_folder_name_" * 3)
    folder.mkdir()
    for name in ("first", "second"):
        shutil.copy(ROOT / "datasets" / "sample.jsonl", folder / f"{name}.jsonl")
    sweep = tmp_path / "sweep"
    paths = ",".join(str(folder / f"{name}.jsonl") for name in ("first", "second"))
    assert (
        memlab_cli("run", "-m", "dataset=jsonl", f"dataset.path={paths}", "debug=default", f"hydra.sweep.dir={sweep}")
        == 0
    )
    assert overflowing(sweep / "comparison.html", ".card", tmp_path) == []
