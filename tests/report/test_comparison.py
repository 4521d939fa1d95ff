"""Comparisons: labels from the overrides that differ, Pareto fronts, failed jobs, the written files."""

from __future__ import annotations

import dataclasses
import html
import random
from collections.abc import Callable
from pathlib import Path

import pandas as pd
from hypothesis import given
from hypothesis import strategies as st
from simulated_runs import make_dialogues

from memlab.report import RunData, find_runs, load_run
from memlab.report.comparison import (
    SHORT_NAMES,
    comparison_table,
    pareto_figures,
    pareto_front,
    run_labels,
    swept_parameters,
    write_comparison,
)
from memlab.report.fmt import fmt_value


def brute_force_front(cost: list[float], quality: list[float]) -> list[bool]:
    """A point is on the front when no other point is at least as good on both and better on one."""
    n = len(cost)
    return [
        not any(
            cost[j] <= cost[i] and quality[j] >= quality[i] and (cost[j], quality[j]) != (cost[i], quality[i])
            for j in range(n)
        )
        for i in range(n)
    ]


@given(st.lists(st.tuples(st.integers(0, 20), st.integers(0, 20)), min_size=1, max_size=12))
def test_pareto_front_matches_brute_force(points: list[tuple[int, int]]) -> None:
    cost, quality = [float(c) for c, _ in points], [float(q) for _, q in points]
    assert pareto_front(cost, quality) == brute_force_front(cost, quality)


def test_pareto_front_skips_undefined_points() -> None:
    assert pareto_front([1.0, 2.0, float("nan")], [None, 0.5, 0.9]) == [None, True, None]  # type: ignore[list-item]


def test_labels_keep_only_what_differs() -> None:
    runs = [
        RunData(Path(str(i)), manifest={"overrides": ["dataset=locomo", f"context={c}"]})
        for i, c in enumerate(["none", "trim"])
    ]
    assert run_labels(runs) == ["context=none", "context=trim"]


def test_a_group_a_run_did_not_choose_is_not_named_default() -> None:
    """ "default" read as the entry of that name: `debug=default` for both runs, though one had not set debug."""
    runs = [
        RunData(Path("a"), manifest={"overrides": ["debug=default"]}, config={"seed": 0}),
        RunData(Path("b"), manifest={"overrides": ["seed=1"]}, config={"seed": 1}),
    ]
    assert swept_parameters(runs) == {"debug": ["default", "(not set)"], "seed": ["0", "1"]}


def test_labels_fall_back_to_the_config_when_there_are_no_overrides() -> None:
    runs = [
        RunData(Path("a"), config={"context": {"_target_": "memlab.context.Trim", "keep_first": 2}, "seed": 0}),
        RunData(
            Path("b"), config={"context": {"_target_": "memlab.context.SlidingWindow", "max_tokens": 9}, "seed": 0}
        ),
        RunData(
            Path("c"), config={"context": {"_target_": "memlab.context.SlidingWindow", "max_tokens": 5}, "seed": 0}
        ),
    ]
    assert run_labels(runs) == [
        "context=Trim",
        "context=SlidingWindow context.max_tokens=9",
        "context=SlidingWindow context.max_tokens=5",
    ]


def test_comparison_of_a_sweep_marks_the_front_and_the_failure(sweep_dir: Path) -> None:
    runs = [load_run(p) for p in find_runs([sweep_dir])]
    frame = comparison_table(runs)
    assert list(frame["status"]) == ["ok", "ok", "ok", "ok", "failed"]
    by_label = frame.set_index("label")
    assert by_label.loc["context.keep=0 context.summarize=False", "context.evidence_retention"] == 1.0
    # keep=0 keeps everything, keep=6 is the cheapest: both on the front; keep=12 costs more for the same retention
    front = by_label["pareto.evidence_retention"].to_dict()
    assert front["context.keep=0 context.summarize=False"] and front["context.keep=6 context.summarize=False"]
    assert not front["context.keep=12 context.summarize=False"]
    failed = by_label.loc["context.keep=99 context.summarize=False"]
    assert failed["error"] == "FileNotFoundError: no such file: /nonexistent.json"
    summarized = by_label.loc["context.keep=6 context.summarize=True"]
    # its summary line names the dropped turns ("Turn 3 of talk 0") but keeps none of their content
    assert summarized["context.evidence_fed_to_summary"] > 0 == summarized["context.evidence_in_summary"]


def test_write_comparison_files(sweep_dir: Path) -> None:
    runs = [load_run(p) for p in find_runs([sweep_dir])]
    paths = write_comparison(sweep_dir, runs, title="sweep")
    csv = pd.read_csv(paths["comparison.csv"])
    assert len(csv) == 5 and "tokens.prompt.mean" in csv and "latency.context.p50_us" in csv
    md = paths["comparison.md"].read_text()
    assert "## Failed configurations" in md and "FileNotFoundError" in md
    page = paths["comparison.html"].read_text()
    assert page.count("data:image/png;base64,") >= 3  # Pareto front, prompt curves, latency
    assert 'class="badge failed"' in page


def test_find_runs_orders_jobs_numerically(tmp_path: Path, make_run) -> None:
    order = list(range(12))
    random.Random(0).shuffle(order)
    for i in order[:3]:
        make_run(tmp_path / "s" / str(i), keep=i, dialogues=make_dialogues(1, 6))
    found = [int(p.name) for p in find_runs([tmp_path / "s"])]
    assert found == sorted(order[:3])


def test_runs_of_different_data_are_flagged_where_they_are_compared(
    tmp_path: Path, capsys, memlab_cli, make_config
) -> None:
    """A seed sweep of synthetic data replays other dialogues per seed: the comparison picked a seed as if it were a
    setting ("What to pick: ... seed=1"), and recommend recommended it."""
    from memlab.experiment import run_experiment

    runs = [
        run_experiment(make_config("debug=default", f"seed={seed}", "report.plots=false"), tmp_path / str(seed)).run_dir
        for seed in (0, 1)
    ]
    said = "The runs replayed 2 different datasets (manifest.json's data_sha256: a seed, a dataset or its selection"
    capsys.readouterr()
    assert memlab_cli("report", *map(str, runs), "-o", str(tmp_path / "cmp")) == 0
    assert f"memlab: WARNING: {said}" in capsys.readouterr().err
    assert f"> **{said}" in (tmp_path / "cmp" / "comparison.md").read_text()
    assert html.escape(said) in (tmp_path / "cmp" / "comparison.html").read_text()
    memlab_cli("recommend", *map(str, runs), "--budget", "1e9")
    assert f"memlab: WARNING: {said}" in capsys.readouterr().err
    capsys.readouterr()
    assert memlab_cli("report", str(runs[0]), str(runs[0]), "-o", str(tmp_path / "same")) == 0
    assert "different datasets" not in capsys.readouterr().err  # one run twice: the same data


def test_runs_of_different_data_have_a_front_each_and_no_pick_across_them(tmp_path: Path, memlab_cli) -> None:
    """The defect: experiment=ci's front and "What to pick" ordered synthetic and LoCoMo runs together (a synthetic run
    marked dominated by a LoCoMo one)."""
    sweep = tmp_path / "sweep"
    args = ("-m", "debug=default", "dataset.seed=1,2", "context=none,sliding_window", "context.max_tokens=200")
    assert memlab_cli("run", *args, "report.plots=false", f"hydra.sweep.dir={sweep}") == 0
    table = pd.read_csv(sweep / "comparison.csv")
    assert table["data"].nunique() == 2
    for _, group in table.groupby("data"):  # each dataset's front, as a sweep of that dataset alone draws it
        expected = pareto_front(group["tokens.prompt.mean"].tolist(), group["context.evidence_retention"].tolist())
        assert group["pareto.evidence_retention"].tolist() == expected
    assert table["pareto.evidence_retention"].sum() >= 2  # one point per dataset at least
    md = (sweep / "comparison.md").read_text()
    assert "What to pick: these runs replayed different data" in md


def _probed_and_unprobed(tmp_path: Path, make_run: Callable[..., Path]) -> tuple[Path, Path]:
    """A run with probe questions (keep=0) and one on the same dialogues without any (keep=4: fewer tokens, its
    evidence kept undefined)."""
    probed = make_run(tmp_path / "probed", keep=0, dialogues=make_dialogues(2, 12))
    bare = [dataclasses.replace(d, probes=()) for d in make_dialogues(2, 12)]
    return probed, make_run(tmp_path / "unprobed", keep=4, dialogues=bare)


def test_a_run_without_evidence_is_not_measured_rather_than_dominated(tmp_path: Path, make_run, memlab_cli) -> None:
    """The defect: a run whose evidence kept is undefined (tau-bench: no probe questions) was called "Dominated" though
    it sent fewer tokens, and the Pareto figure left it out without saying so; comparison.csv said it was off the
    front (False)."""
    probed, unprobed = _probed_and_unprobed(tmp_path, make_run)
    assert memlab_cli("report", str(probed), str(unprobed), "-o", str(tmp_path / "cmp")) == 0
    table = pd.read_csv(tmp_path / "cmp" / "comparison.csv")
    assert table["tokens.prompt.mean"][1] < table["tokens.prompt.mean"][0]
    assert pd.isna(table["context.evidence_retention"][1])
    front = table["pareto.evidence_retention"]
    assert front[0] and pd.isna(front[1])  # not on the front nor off it: an empty cell, not False
    md = (tmp_path / "cmp" / "comparison.md").read_text()
    assert "Dominated" not in md
    said = "evidence kept not measured, so neither on its Pareto front nor dominated (left out of its figure): #1."
    assert said in " ".join(md.split())
    rows = [line for line in md.splitlines() if line.startswith("|   1 |")]
    assert rows[0].rstrip(" |").endswith("not measured")
    page = (tmp_path / "cmp" / "comparison.html").read_text()
    assert '<span class="muted">not measured</span>' in page
    assert "not plotted, evidence kept not measured (undefined): #1</figcaption>" in page


def test_comparison_md_shows_numbers_as_the_html_does(sweep_dir: Path, tmp_path: Path) -> None:
    """The defect: tabulate re-parsed comparison.md's formatted cells (8,733.1 showed as 8733.1, 591.0 as 591).

    The finished jobs only: a failed job's "—" made every column text, which tabulate left as it was."""
    runs = [run for run in map(load_run, find_runs([sweep_dir])) if not run.failed]
    paths = write_comparison(tmp_path, runs, title="sweep")
    csv = pd.read_csv(paths["comparison.csv"])
    lines = [line for line in paths["comparison.md"].read_text().splitlines() if line.startswith("|")]
    tables: list[list[list[str]]] = []
    for i, line in enumerate(lines):
        cells = [c.strip() for c in line.strip("|").split("|")]
        if i + 1 < len(lines) and set(lines[i + 1]) <= set("|-: "):
            tables.append([cells])  # a header, its alignment row next
        elif not set(line) <= set("|-: "):
            tables[-1].append(cells)
    columns = {short: name for name, short in SHORT_NAMES.items()}
    checked = 0
    for head, *rows in tables:
        if head[0] != "#":
            continue  # the failed jobs
        for j, short in enumerate(head):
            if short in columns and columns[short] in csv:
                for row in rows:
                    assert row[j] == fmt_value(columns[short], csv[columns[short]][int(row[0])]), short
                    checked += 1
    assert checked >= 12
    assert any(
        row[head.index("prompt p95")].endswith(".0") for head, *rows in tables if "prompt p95" in head for row in rows
    )


def test_the_subtitle_says_where_the_runs_are_not_where_the_comparison_goes(
    tmp_path: Path, make_run, memlab_cli
) -> None:
    """The defect: `memlab report A B -o OUT` said "2 run directories under OUT", where no run is."""
    a = make_run(tmp_path / "runs" / "a", keep=0, dialogues=make_dialogues(1, 6))
    b = make_run(tmp_path / "runs" / "b", keep=4, dialogues=make_dialogues(1, 6))
    assert memlab_cli("report", str(a), str(b), "-o", str(tmp_path / "cmp")) == 0
    page = (tmp_path / "cmp" / "comparison.html").read_text()
    said = f"2 run directories under {tmp_path / 'runs'}"
    assert f"<p>{html.escape(said)}</p>" in page
    assert str(tmp_path / "cmp") not in page


def test_inline_code_of_the_findings_is_code_in_html(sweep_dir: Path, tmp_path: Path) -> None:
    """The defect: comparison.html showed markdown's backticks ("`memlab recommend SWEEP_DIR --budget N`")."""
    paths = write_comparison(tmp_path, [load_run(p) for p in find_runs([sweep_dir])], title="sweep")
    assert "`memlab recommend SWEEP_DIR --budget N`" in " ".join(paths["comparison.md"].read_text().split())
    page = paths["comparison.html"].read_text()
    shows = page[page.index("<h2>What this shows</h2>") : page.index("<h2>Configurations</h2>")]
    assert "<code>memlab recommend SWEEP_DIR --budget N</code>" in shows and "`" not in shows


def test_a_pareto_figure_of_one_point_shows_no_comparison_and_no_share_above_100(tmp_path: Path, make_run) -> None:
    """The defect: one plotted run (the other's evidence kept undefined) still had a "dominated" legend entry, and the
    share axis ran to 102.5% with ticks at 101 and 102."""
    probed, unprobed = _probed_and_unprobed(tmp_path, make_run)
    frame = comparison_table([load_run(probed), load_run(unprobed)])
    assert frame["context.evidence_retention"][0] == 1.0
    (fig, caption), *_ = pareto_figures(frame)
    (ax,) = fig.axes
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["Pareto front"]
    assert ax.get_ylim()[1] == 100.0 and max(ax.get_yticks()) <= 100.0
    assert [len(c.get_offsets()) for c in ax.collections] == [1]
    assert caption.endswith("not plotted, evidence kept not measured (undefined): #1")


def test_the_pareto_legend_lies_outside_the_plot(sweep_dir: Path) -> None:
    """The defect: the legend sat inside the axes, on the front's line near its foot, its marker read as a point."""
    runs = [load_run(p) for p in find_runs([sweep_dir])]
    figures = pareto_figures(comparison_table(runs))
    assert figures
    for fig, _ in figures:
        fig.canvas.draw()
        (ax,) = fig.axes
        legend, frame = ax.get_legend().get_window_extent(), ax.get_window_extent()
        assert legend.y1 < frame.y0 and not legend.overlaps(frame)
        assert fig.bbox.contains(legend.x0, legend.y0) and fig.bbox.contains(legend.x1, legend.y1)
