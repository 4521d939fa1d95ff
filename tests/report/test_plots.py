"""The report's plots lay out without matplotlib collapsing an axes, on the inputs that once collapsed one, and the
prompt curves of a comparison stay readable (figures read as matplotlib objects, from real run folders)."""

from __future__ import annotations

import html
import io
import json
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from matplotlib import image
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from simulated_runs import make_dialogues, write_run

from memlab.metrics.latency import LATENCY_PARTS, LATENCY_STAGES
from memlab.report import load_run, plots, run_files
from memlab.report.comparison import write_comparison
from memlab.rundir import data_hash

STAGES = [*LATENCY_STAGES, *LATENCY_PARTS]  # every stage and part a latency.csv may hold


def _latency_csv(stages: list[str], scale: float = 1.0) -> pd.DataFrame:
    """A latency.csv frame: each stage timed from tens of µs to tens of ms, as a long-term run's are."""
    values = np.geomspace(20, 90_000, 9) * scale
    return pd.DataFrame([(s, int(v)) for s in stages for v in values], columns=["stage", "latency_us"])


# matplotlib's own warnings (a collapsed axes) are errors; an object another test left to the garbage collector
# raises its ResourceWarning wherever it is freed, here too, and is the business of that test (tests/peers has two)
@pytest.mark.filterwarnings("error", "ignore::pytest.PytestUnraisableExceptionWarning")
@pytest.mark.parametrize(
    "samples",
    [
        # `memlab ablate`'s run report: the six long-term stages of one run named after the ablation
        {"ablate_longterm-full": _latency_csv([s for s in STAGES if s != "context"])},
        {"ablate_longterm-full": _latency_csv(STAGES)},
        {f"longterm-variant-{i}": _latency_csv(STAGES, 1 + i) for i in range(6)},  # a comparison of six runs
        {"no timings": _latency_csv([])},
    ],
    ids=["ablation-run", "all-stages", "comparison", "empty"],
)
def test_latency_boxes_lay_out_every_stage_without_a_collapsed_axes(samples: dict[str, pd.DataFrame]) -> None:
    png = plots.latency_boxes(samples)
    pixels = image.imread(io.BytesIO(png), format="png")
    stages = {s for frame in samples.values() for s in frame["stage"]}
    assert pixels.shape[0] >= 100 * max(1, len(stages))  # one readable row per stage, not squeezed into one


def _prompt_axes(figures: list[Figure]) -> Axes:
    (ax,) = [f.axes[0] for f in figures if f.axes and f.axes[0].get_title().startswith("Prompt tokens per call")]
    return ax


def _compared(runs: list[Path], out: Path) -> str:
    write_comparison(out, [load_run(p) for p in runs])
    return (out / "comparison.html").read_text(encoding="utf-8")


def test_prompt_curves_of_a_sweep_are_on_a_log_axis_and_lines_that_coincide_stay_visible(
    tmp_path: Path, drawn_figures: Callable[[], list[Figure]]
) -> None:
    """The defect: the full history set a linear y axis up to its last call's tokens, so windows of a few hundred
    tokens lay flat at its bottom, and two configurations sending the same prompts drew one line of two colours."""
    jobs = [(0, "a"), (6, "b"), (6, "c"), (12, "d")]  # jobs 1 and 2 send the same prompts
    runs = [
        write_run(tmp_path / f"{i}", keep=k, overrides=[f"context.keep={k}", f"tag={t}"])
        for i, (k, t) in enumerate(jobs)
    ]
    figures = drawn_figures()
    _compared(runs, tmp_path / "cmp")
    ax = _prompt_axes(figures)
    assert ax.get_yscale() == "log" and ax.get_ylabel().endswith("(log scale)")
    lines = [line for line in ax.get_lines() if not str(line.get_label()).startswith("full history")]
    assert len(lines) == len(jobs)
    assert len({(line.get_color(), str(line.get_linestyle()), line.get_marker()) for line in lines}) == len(jobs)
    same, again = lines[1], lines[2]
    assert str(again.get_label()).endswith(f"(= {str(same.get_label()).split()[0]})"), again.get_label()
    assert same.get_markevery() != again.get_markevery(), "the markers of lines that coincide lie at other points"
    assert [str(line.get_label()) for line in lines if "(=" in str(line.get_label())] == [again.get_label()]


def test_prompt_curves_draw_the_full_history_of_each_dataset(
    tmp_path: Path, drawn_figures: Callable[[], list[Figure]]
) -> None:
    """The defect: runs on two datasets were drawn against the first run's full history only."""
    data = [make_dialogues(2, 40), make_dialogues(3, 24), make_dialogues(2, 40)]  # runs 0 and 2 share their data
    runs = []
    for i, dialogues in enumerate(data):
        run = write_run(tmp_path / str(i), keep=6, overrides=[f"job={i}"], dialogues=dialogues)
        manifest = json.loads((run / "manifest.json").read_text())
        manifest["data_sha256"] = data_hash(dialogues)  # as `memlab run` writes it
        (run / "manifest.json").write_text(json.dumps(manifest))
        runs.append(run)
    figures = drawn_figures()
    page = _compared(runs, tmp_path / "cmp")
    ax = _prompt_axes(figures)
    full = [line for line in ax.get_lines() if str(line.get_label()).startswith("full history")]
    sent = [line for line in ax.get_lines() if line not in full]
    tags = [str(line.get_label()).split()[0] for line in sent]
    assert [str(line.get_label()) for line in full] == [
        f"full history, data of {tags[0]}, {tags[2]}",
        f"full history, data of {tags[1]}",
    ]
    assert [line.get_color() for line in full] == [sent[0].get_color(), sent[1].get_color()]
    assert all(line.get_linestyle() == "--" and line.get_marker() == "None" for line in full)
    assert all(line.get_marker() != "None" for line in sent), "a configuration's line has markers, the history's none"
    assert "dashed: the whole history of each dataset, in the colour of the first configuration" in page


def test_latency_whiskers_end_at_the_p95_the_tables_give(
    tmp_path: Path, drawn_figures: Callable[[], list[Figure]]
) -> None:
    """The defect: whiskers at 1.5 IQR with outliers hidden ended below the table's p95, and nothing said so."""
    run_dir = write_run(tmp_path / "run", keep=6, summarize=True)
    figures = drawn_figures()
    run = load_run(run_dir)
    page = run_files(run)["report.html"]
    (fig,) = [f for f in figures if f.axes[-1].get_xlabel().startswith("µs per call")]
    latency = json.loads((run_dir / "latency.json").read_text())
    for ax in fig.axes:
        ends = max(float(np.max(line.get_xdata())) for line in ax.get_lines())
        p95 = latency[f"latency.{ax.get_title(loc='left')}.p95_us"]
        assert ends == pytest.approx(max(p95, 1.0)), ax.get_title(loc="left")
    assert "whiskers p5-p95, calls beyond not drawn" in fig.axes[-1].get_xlabel()
    caption = "Latency per step on this machine (latency.csv); whiskers at p5 and p95 (the table's p95), calls beyond"
    assert html.escape(caption) in page
