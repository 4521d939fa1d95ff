"""`memlab recommend` and `memlab report` on real run directories."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pandas as pd
import pytest
from simulated_runs import job_dir

from memlab.cli import main
from memlab.report import find_runs, load_run
from memlab.report.comparison import comparison_table
from memlab.report.recommend import recommend


def cli(capsys: pytest.CaptureFixture[str], *args: object) -> tuple[int, str]:
    with pytest.raises(SystemExit) as exit_info:
        main([str(a) for a in args])
    return int(exit_info.value.code or 0), capsys.readouterr().out


def test_recommend_the_best_retention_within_budget(sweep_dir: Path) -> None:
    frame = comparison_table([load_run(p) for p in find_runs([sweep_dir])])
    tokens = frame.set_index("label")["tokens.prompt.mean"]
    # a budget that admits everything but the full history: the three windows tie on retention (1/3),
    # keep=12 wins on answer coverage
    budget = float(tokens["context.keep=12 context.summarize=False"]) + 1
    rec = recommend(frame, budget)
    assert rec.best is not None and rec.best["label"] == "context.keep=12 context.summarize=False"
    assert any(line.startswith("over budget: context.keep=0") for line in rec.reasons)
    assert any(line.startswith("failed: context.keep=99") for line in rec.reasons)
    # with a generous budget the full history keeps all the evidence
    assert recommend(frame, 1e9).best["label"] == "context.keep=0 context.summarize=False"  # type: ignore[index]


def test_recommend_cli_says_why_and_fails_when_nothing_fits(sweep_dir: Path, capsys) -> None:
    code, out = cli(capsys, "recommend", sweep_dir, "--budget", 1e9)
    assert code == 0 and out.startswith(
        "recommended: context.keep=0 context.summarize=False: context.evidence_retention 100.0%"
    )
    code, out = cli(capsys, "recommend", sweep_dir, "--budget", 10, "--budget-metric", "tokens.prompt.p95")
    assert (
        code == 1
        and "no configuration keeps tokens.prompt.p95 <= 10" in out
        and "the cheapest is context.keep=6" in out
    )


def test_report_rebuilds_a_comparison_from_run_directories(make_run, tmp_path: Path, capsys) -> None:
    a, b = (
        make_run(tmp_path / "a", keep=4, overrides=["context.keep=4"]),
        make_run(tmp_path / "b", keep=8, overrides=["context.keep=8"]),
    )
    code, out = cli(capsys, "report", a, b, "-o", tmp_path / "cmp")
    assert code == 0 and "compared 2 runs" in out
    md = (tmp_path / "cmp" / "comparison.md").read_text()
    assert "| context.keep |" in md.replace("   ", " ").replace("  ", " ")  # one column per swept parameter
    table = pd.read_csv(tmp_path / "cmp" / "comparison.csv")
    assert table["param.context.keep"].tolist() == [4, 8]
    assert table["label"].tolist() == ["context.keep=4", "context.keep=8"]


def test_report_rebuilds_one_runs_report(make_run, tmp_path: Path, capsys) -> None:
    """`memlab report RUN` writes again, from the run's files alone, the reports the run wrote."""
    run = make_run(tmp_path / "a", keep=4)
    written = {name: (run / name).read_text() for name in ("report.html", "report.md")}
    for name in written:
        (run / name).unlink()
    code, _ = cli(capsys, "report", run)
    assert code == 0
    assert {name: (run / name).read_text() for name in written} == written


def test_report_of_several_dirs_needs_an_output(sweep_dir: Path, capsys) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["report", str(job_dir(sweep_dir, 0)), str(job_dir(sweep_dir, 1))])
    assert exit_info.value.code == 2
    assert "needs -o OUT" in capsys.readouterr().err


def test_recommend_rejects_an_unknown_metric_naming_the_valid_ones(sweep_dir: Path, capsys) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["recommend", str(sweep_dir), "--budget", "1e9", "--by", "context.evidence_retension"])
    err = capsys.readouterr().err
    assert exit_info.value.code == 2
    assert "--by 'context.evidence_retension' is not a metric" in err and "context.evidence_retention," in err


@pytest.mark.parametrize("budget", ["-5", "0", "nan", "-inf", "inf", "abc"])
def test_recommend_refuses_a_budget_that_is_no_number_of_tokens(sweep_dir: Path, capsys, budget: str) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["recommend", str(sweep_dir), f"--budget={budget}"])
    assert exit_info.value.code == 2
    assert f"argument --budget: '{budget}' is not a number of tokens above 0" in capsys.readouterr().err


def _metrics_with(run: Path, key: str, value: object) -> None:
    metrics = json.loads((run / "metrics.json").read_text(encoding="utf-8"))
    (run / "metrics.json").write_text(json.dumps({**metrics, key: value}), encoding="utf-8")


DAMAGES = {
    "a byte that is not UTF-8": ("metrics.json", lambda run: (run / "metrics.json").write_bytes(b'{"calls": "\xff"}')),
    "text for a number": ("metrics.json", lambda run: _metrics_with(run, "tokens.prompt.mean", "abc")),
    "true for a number": ("metrics.json", lambda run: _metrics_with(run, "tokens.prompt.mean", True)),
    "nested too deeply": ("metrics.json", lambda run: (run / "metrics.json").write_text("[" * 100_000 + "]" * 100_000)),
    "unclosed YAML": ("config.yaml", lambda run: (run / "config.yaml").write_text("a: [\n")),
    "a YAML list": ("config.yaml", lambda run: (run / "config.yaml").write_text("- a\n- b\n")),
    "a ragged CSV": ("questions.csv", lambda run: (run / "questions.csv").write_text('a,b\n1,2,3,4\n"x\n')),
}


@pytest.mark.parametrize("damage", list(DAMAGES))
def test_a_damaged_run_directory_is_one_line_naming_the_file(sweep_dir: Path, tmp_path: Path, capsys, damage) -> None:
    """report, compare and recommend read runs back through `load_run`: a file edited or damaged by hand ends in
    one `memlab: error:` line naming it (status 2), never a traceback, a comparison of text or a pick of `true`."""
    name, damaged = DAMAGES[damage]
    good = find_runs([sweep_dir])[1]
    run = shutil.copytree(good, tmp_path / "run")
    damaged(run)
    for args in (["report", run, "-o", tmp_path / "out"], ["compare", good, run], ["recommend", run, "--budget", 1e9]):
        capsys.readouterr()
        with pytest.raises(SystemExit) as exit_info:
            main([str(a) for a in args])
        err = capsys.readouterr().err
        assert exit_info.value.code == 2, (args, err)
        assert err.startswith(f"memlab: error: {run / name}: ") and err.count("\n") == 1, (args, err)
    assert not (tmp_path / "out").exists()


def test_report_refuses_a_broken_multirun_yaml_and_an_out_that_is_a_file(
    sweep_dir: Path, tmp_path: Path, capsys
) -> None:
    sweep = shutil.copytree(sweep_dir, tmp_path / "sweep")
    (sweep / "multirun.yaml").write_text("hydra: {{{\n")
    taken = tmp_path / "taken"
    taken.write_text("")
    for args, said in (
        ([sweep], f"{sweep / 'multirun.yaml'}: not a readable multirun.yaml"),
        ([sweep_dir, sweep_dir, "-o", taken], f"-o {taken}: is a file"),
    ):
        capsys.readouterr()
        with pytest.raises(SystemExit) as exit_info:
            main(["report", *map(str, args)])
        err = capsys.readouterr().err
        assert exit_info.value.code == 2 and err.startswith(f"memlab: error: {said}") and err.count("\n") == 1, err


# One worker runs this module under `--dist loadgroup`: `strategy_sweep` is built once, not once per worker.
pytestmark = pytest.mark.xdist_group("recommend_and_cli")


@pytest.fixture(scope="module")
def strategy_sweep(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Real runs of none / sliding_window / summarize / composite on one synthetic dialogue, laid out as a sweep."""
    from hydra import compose, initialize_config_module

    from memlab import config
    from memlab.experiment import run_experiment

    config.register()
    root = tmp_path_factory.mktemp("strategies")
    for i, name in enumerate(("none", "sliding_window", "summarize", "composite")):
        overrides = ["dataset.dialogues=1", "dataset.sessions=3", f"context={name}"]
        with initialize_config_module(config_module="memlab.conf", version_base=None):
            cfg = compose(config_name="config", overrides=overrides)
        run_experiment(cfg, root / str(i), overrides=[f"context={name}"])
    return root


def test_runs_that_differ_only_in_what_their_strategy_ignored_are_one_runner_up(tmp_path: Path) -> None:
    """trim ignores context.max_tokens: trim at 1000 and at 4000 are the same configuration, named once."""
    from hydra import compose, initialize_config_module

    from memlab import config
    from memlab.experiment import run_experiment

    config.register()
    runs = [
        ["context=sliding_window", "context.max_tokens=50"],
        ["context=trim", "context.max_tokens=1000"],
        ["context=trim", "context.max_tokens=4000"],
        ["context=none"],
    ]
    for i, overrides in enumerate(runs):
        with initialize_config_module(config_module="memlab.conf", version_base=None):
            cfg = compose(config_name="config", overrides=["dataset.dialogues=1", "dataset.sessions=3", *overrides])
        run_experiment(cfg, tmp_path / str(i), overrides=overrides)
    frame = comparison_table([load_run(p) for p in find_runs([tmp_path])])
    rec = recommend(frame, 1e9, by="tokens.prompt.mean")  # the fewest tokens first: the tight window, then trim
    assert rec.best is not None and rec.best["label"] == "context=sliding_window context.max_tokens=50"
    then = [line for line in rec.reasons if line.startswith("  then ")]
    assert len(then) == 2 and sum("context=trim" in line for line in then) == 1, rec.reasons
    # named as overrides to paste: "context=trim context.max_tokens=4000" read as if trim used its max_tokens
    assert sum(line.startswith("  then context=trim: ") for line in then) == 1, rec.reasons
    without_window = frame[frame["label"] != "context=sliding_window context.max_tokens=50"]
    assert recommend(without_window, 1e9, by="tokens.prompt.mean").reasons[0].startswith("context=trim: ")


def test_a_pick_from_a_preset_sweep_is_named_as_its_override(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, memlab_run_err, memlab_cli, capfd
) -> None:
    """experiment=peers sweeps `+experiment/peers=...` (a group the defaults list lacks): recommend named the pick
    `experiment/peers=trim`, which Hydra refuses when pasted back."""
    monkeypatch.setenv("CI", "1")
    sweep = tmp_path / "sweep"
    status, err = memlab_run_err(
        "-m", "+experiment/peers=trim,sliding_window_1000", "debug=default", f"hydra.sweep.dir={sweep}"
    )
    assert status == 0, err
    assert memlab_cli("recommend", str(sweep), "--budget", "1e9") == 0
    lines = [line.removeprefix("recommended: ") for line in capfd.readouterr().out.splitlines()]
    named = sorted(line.split(": ")[0] for line in lines if ": context.evidence_retention" in line)
    assert named == ["  then +experiment/peers=trim", "+experiment/peers=sliding_window_1000"], lines


def test_recommend_never_picks_a_configuration_that_costs_more_than_the_full_history(strategy_sweep: Path) -> None:
    frame = comparison_table([load_run(p) for p in find_runs([strategy_sweep])])
    rows = frame.set_index("label")
    full = rows.loc["context=none"]
    # Independently: net savings from the run's own totals, and which configurations spend more than the history.
    for label, r in rows.iterrows():
        spent = r["tokens.prompt.total"] + r["tokens.aux.total"]
        assert r["tokens.net_saved_ratio"] == pytest.approx(1 - spent / r["tokens.full_history.total"]), label
        assert r["tokens.full_history.total"] == full["tokens.full_history.total"]
    costly = {
        str(label)
        for label, r in rows.iterrows()
        if r["tokens.net_saved_ratio"] < 0 or r["cost.usd"] > r["cost.full_history_usd"]
    }
    assert costly, "the sweep must hold a configuration whose summarizer reads more than it saves"
    for budget in sorted(rows["tokens.prompt.mean"]):
        rec = recommend(frame, budget + 1e-9)
        cheaper = [
            lbl for lbl in rows.index if lbl not in costly and rows.loc[lbl, "tokens.prompt.mean"] <= budget + 1e-9
        ]
        if cheaper:
            assert rec.best is not None and rec.best["label"] not in costly, (budget, rec.reasons)


def test_a_pick_by_a_metric_no_run_measured_is_no_pick(
    tmp_path: Path, tau_bench_path: Path, make_config, memlab_cli, capsys
) -> None:
    """tau-bench has no evidence turns: recommend picked by the default --by (undefined for every run), exit 0."""
    from memlab.experiment import run_experiment

    tau = ("dataset=tau_bench", f"dataset.path={tau_bench_path}", "debug=default", "report.plots=false")
    runs = [str(run_experiment(make_config(*tau, f"context={c}"), tmp_path / c).run_dir) for c in ("none", "trim")]
    capsys.readouterr()
    assert memlab_cli("recommend", *runs, "--budget", "1e9") == 1
    out = capsys.readouterr().out
    assert out.startswith("no recommendation: no configuration within the budget measured context.evidence_retention")
    assert "choose --by among what they measured: " in out and "tokens.net_saved_ratio" in out and "latency" not in out
    assert memlab_cli("recommend", *runs, "--budget", "1e9", "--by", "tokens.net_saved_ratio") == 0


def test_a_budget_below_the_one_asked_for_is_the_reason_before_the_counter() -> None:
    """The defect: max_tokens=1000 under a 2,000 budget was told to switch to context.counter=exact."""
    from memlab.report.budget import Budget, unused_hint

    assert unused_hint(Budget(1000, "estimate"), 2000) == "its context.max_tokens=1000 is below the budget"
    assert "context.counter=exact" in unused_hint(Budget(2000, "estimate"), 2000)


def test_a_budget_of_another_metric_says_nothing_of_a_token_budget(sweep_dir: Path) -> None:
    """The defect: --budget-metric cost.usd reported that the pick "uses 0% of the 2,000-token budget"."""
    frame = comparison_table([load_run(p) for p in find_runs([sweep_dir])])
    rec = recommend(frame, 1e9, budget_metric="cost.usd")
    assert rec.best is not None and not any("token budget" in line for line in rec.reasons), rec.reasons
    assert any("token budget" in line for line in recommend(frame, 1e9).reasons)
