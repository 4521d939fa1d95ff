"""A run directory holds every result file; its reports are self-contained and rebuild from disk."""

from __future__ import annotations

import html
import json
import re
from collections.abc import Callable
from pathlib import Path

from matplotlib.figure import Figure
from replays import SHARED_RUNS_GROUP

from memlab.report import find_runs, load_run, run_files
from memlab.report.run_report import category_table


def test_run_directory_files_and_round_trip(make_run, tmp_path: Path) -> None:
    run_dir = make_run(tmp_path / "run", keep=6, overrides=["context.keep=6"])
    names = {p.name for p in run_dir.iterdir()}
    expected = {"metrics.json", "latency.json", "calls.csv", "questions.csv", "latency.csv", "manifest.json"}
    assert expected | {"report.md", "report.html", "config.yaml"} <= names
    metrics = json.loads((run_dir / "metrics.json").read_text())
    assert not any(k.startswith("latency.") for k in metrics), "latencies must stay out of metrics.json"
    latency = json.loads((run_dir / "latency.json").read_text())
    assert latency["latency.context.p50_us"] is not None and latency["latency.reference_us"] > 0
    run = load_run(run_dir)
    assert run.metrics == metrics
    assert len(run.questions) == 9 and set(run.questions["probe"]) >= {"d0-q0", "d2-q2"}
    assert len(run.calls) == metrics["calls"]
    assert run.latency_samples["stage"].count("context") == metrics["calls"] + 9  # every call and probe
    assert find_runs([run_dir]) == [run_dir]


def test_report_md_lists_metrics_categories_and_lost_questions(make_run, tmp_path: Path) -> None:
    text = (make_run(tmp_path / "run", keep=6) / "report.md").read_text()
    for name in ("tokens.prompt.mean", "context.evidence_retention", "cost.usd", "latency.reference_us"):
        assert name in text
    assert "## Per question category" in text and "## Questions whose evidence was lost most" in text
    # keep=6 drops the early turn each dialogue's first probe asks about
    assert re.search(r"\| talk-0 +\| d0-q0 ", text)


def test_report_html_is_self_contained(make_run, tmp_path: Path) -> None:
    page = (make_run(tmp_path / "run", keep=6) / "report.html").read_text()
    assert page.startswith("<!DOCTYPE html>")
    assert page.count("data:image/png;base64,") >= 3  # prompt curve, categories, latency
    assert not re.search(r"""(src|href)=["'](https?:|//|file:)""", page), "no external resources"


def test_report_rebuilds_from_disk_the_same(make_run, tmp_path: Path) -> None:
    run_dir = make_run(tmp_path / "run", keep=12)
    rebuilt = run_files(load_run(run_dir))
    assert rebuilt["report.md"] == (run_dir / "report.md").read_text()
    assert rebuilt["metrics.json"] == (run_dir / "metrics.json").read_text()


def test_category_table_reads_the_flat_names() -> None:
    table = category_table(
        {"context.evidence_retention.cat_2": 0.5, "context.evidence_retention.cat_10": 1.0, "x.cat_1": 3}
    )
    assert table.columns == ("category", "context.evidence_retention")
    assert table.rows == (("2", 0.5), ("10", 1.0))


def test_run_experiment_is_byte_stable_and_keeps_latency_apart(make_config, tmp_path: Path) -> None:
    from memlab.experiment import run_experiment

    cfg = make_config("dataset=synthetic", "dataset.dialogues=2", "dataset.sessions=2")
    a, b = run_experiment(cfg, tmp_path / "a"), run_experiment(cfg, tmp_path / "b")
    for name in ("metrics.json", "questions.csv", "calls.csv"):
        assert (a.run_dir / name).read_bytes() == (b.run_dir / name).read_bytes(), name
    assert a.metrics["context.evidence_retention"] == 1.0  # context=none sends everything
    assert "latency.reference_us" in json.loads((a.run_dir / "latency.json").read_text())


def test_answer_evaluation_scores_or_counts_every_answerable_question(make_config, tmp_path: Path) -> None:
    import pandas as pd

    from memlab.experiment import run_experiment

    cfg = make_config("dataset=synthetic", "dataset.dialogues=1", "dataset.sessions=2", "eval.answers=true")
    result = run_experiment(cfg, tmp_path / "run")
    questions = pd.read_csv(result.run_dir / "questions.csv")
    answerable = questions["answer"].notna()
    assert answerable.sum() > 0 and result.metrics["answer.questions"] == int(answerable.sum())
    scored = questions["answer.f1.locomo"].notna()
    # every answerable question is either scored (both scorers, judge) or counted as a failed answer call
    assert int(scored.sum()) + result.metrics["answer.failures"] == int(answerable.sum())
    assert questions.loc[scored, "answer.bleu1.mem0"].between(0, 1).all()
    if scored.any():
        assert result.metrics["answer.f1.locomo"] == questions.loc[scored, "answer.f1.locomo"].mean()


def test_lost_questions_are_those_that_lost_evidence_or_none_said(make_run, tmp_path: Path) -> None:
    """The defect: "Questions whose evidence was lost most" listed questions that had lost none (evidence kept 100%)."""
    lossy = (make_run(tmp_path / "lossy", keep=6) / "report.md").read_text()
    section = lossy[lossy.index("## Questions whose evidence was lost most") :].split("\n\n")[1]
    rows = section.splitlines()[2:]
    assert len(rows) == 6 and not [row for row in rows if "100.0%" in row.split("|")[6]]  # the late probes kept all
    whole = make_run(tmp_path / "whole", keep=0)
    md = (whole / "report.md").read_text()
    said = "No question lost evidence: every probe's evidence was sent verbatim (evidence kept 100%)."
    assert f"## Questions whose evidence was lost most\n\n{said}\n" in md
    assert (
        f"<h2>Questions whose evidence was lost most</h2><p>{html.escape(said)}</p>"
        in (whole / "report.html").read_text()
    )


def test_a_run_without_probes_writes_the_questions_header(make_config, tmp_path: Path, tau_bench_path: Path) -> None:
    """The defect: questions.csv was a single newline, which pandas refuses (EmptyDataError); calls.csv with no call
    already wrote its header. tau-bench has no probes."""
    import pandas as pd

    from memlab.experiment import run_experiment

    cfg = make_config("dataset=tau_bench", f"dataset.path={tau_bench_path}", "dataset.max_dialogues=1")
    run_dir = run_experiment(cfg, tmp_path / "run").run_dir
    questions = pd.read_csv(run_dir / "questions.csv")
    assert questions.empty and list(questions.columns)[:7] == [
        "dialogue", "probe", "category", "question", "answer", "evidence", "prompt_tokens",
    ]  # fmt: skip
    # The columns are those a run with probes starts with, and the run reads back and rebuilds its reports.
    with_probes = run_experiment(make_config("dataset=synthetic", "dataset.dialogues=1"), tmp_path / "probes").run_dir
    header = (with_probes / "questions.csv").read_text().splitlines()[0].split(",")
    assert header[: len(questions.columns)] == list(questions.columns)
    assert run_files(load_run(run_dir))["questions.csv"] == (run_dir / "questions.csv").read_text()


@SHARED_RUNS_GROUP
def test_a_long_term_report_says_which_questions_its_overall_means_leave_out(conv26_longterm_run: Path) -> None:
    """The defect: longterm.questions said 150 while the per-category counts summed to 197, and nothing said the
    overall recall and nDCG leave the adversarial questions out (`eval.overall_excludes`)."""
    metrics = json.loads((conv26_longterm_run / "metrics.json").read_text())
    overall, adversarial = metrics["longterm.questions"], metrics["longterm.questions.cat_adversarial"]
    assert adversarial > 0
    said = (
        f"The overall recall and nDCG means and longterm.questions ({overall:,.0f}) leave out the {adversarial:,.0f} "
        "adversarial questions (`eval.overall_excludes`): an adversarial question's gold answer is that the "
        "conversation does not say"
    )
    report = (conv26_longterm_run / "report.md").read_text(encoding="utf-8")
    section = report[report.index("## Long-term memory") :].split("\n## ")[0]
    assert said in " ".join(section.split()), "under the long-term table"
    page = (conv26_longterm_run / "report.html").read_text(encoding="utf-8")
    section = page[page.index("<h3>Long-term memory</h3>") :].split("<h3>")[1]
    assert (
        html.escape(said, quote=True).replace("`eval.overall_excludes`", "<code>eval.overall_excludes</code>")
        in section
    )


def _bars_axes(run_dir: Path, drawn_figures: Callable[[], list[Figure]]) -> tuple[object, str]:
    """The per-category bar figure's axes of `run_dir`'s report.html, figures drawn, and the page."""
    figures = drawn_figures()
    run = load_run(run_dir)
    run.config["report"] = {"plots": True}  # the shared replay left its figures out (replays.NO_FIGURES)
    page = run_files(run)["report.html"]
    (ax,) = [f.axes[0] for f in figures if "per question category" in f.axes[0].get_title()]
    return ax, page


@SHARED_RUNS_GROUP
def test_a_long_term_reports_category_bars_are_titled_for_retrieval_too(
    conv26_longterm_run: Path, make_run, tmp_path: Path, drawn_figures: Callable[[], list[Figure]]
) -> None:
    """The defect: recall@K and nDCG@10 bars were drawn under "What the context keeps" on an axis of "% of probes'
    evidence / answer words"; a run without long-term memory keeps that title and axis, which fit its bars."""
    ax, page = _bars_axes(conv26_longterm_run, drawn_figures)
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert "ndcg@10" in legend and "recall@10" in legend and "evidence_retention" in legend
    assert ax.get_title() == "Retention and long-term retrieval, per question category"
    assert ax.get_ylabel() == "share or score (%)"
    assert "what long-term retrieval finds (recall@K: evidence in the top K memories; nDCG@10" in page
    ax, _ = _bars_axes(make_run(tmp_path / "window", keep=6), drawn_figures)
    assert not any(t.get_text().startswith(("recall", "ndcg")) for t in ax.get_legend().get_texts())
    assert (ax.get_title(), ax.get_ylabel()) == (
        "What the context keeps, per question category",
        "% of probes' evidence / answer words",
    )
