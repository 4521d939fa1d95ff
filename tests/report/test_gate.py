"""`memlab compare`: passes on identical runs, fails on a planted regression, reads latencies as ratios."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from gate_cli import compare, compare_streams, edited_copy
from simulated_runs import job_dir

from memlab.errors import MemlabError
from memlab.report.gate import compare_sides, load_rules, load_side


def edit_json(path: Path, **changes: object) -> None:
    data = json.loads(path.read_text())
    data.update(changes)
    path.write_text(json.dumps(data))


def test_identical_runs_pass_though_made_separately(make_run, tmp_path: Path, capsys) -> None:
    a = make_run(tmp_path / "a", keep=6)
    b = make_run(tmp_path / "b", keep=6)
    code, out = compare(capsys, a, b)
    assert code == 0, out
    assert out.strip().splitlines()[-1].startswith("PASS")


def test_planted_regression_fails_and_is_named(make_run, tmp_path: Path, capsys) -> None:
    base = make_run(tmp_path / "base", keep=6)
    retention = json.loads((base / "metrics.json").read_text())["context.evidence_retention"]
    cand = edited_copy(base, tmp_path / "cand", "metrics.json", **{"context.evidence_retention": retention - 0.1})
    code, out = compare(capsys, base, cand)
    assert code == 1
    assert "context.evidence_retention" in out and "REGRESSION" in out and "FAIL" in out


def test_a_configuration_only_the_candidate_has_is_listed_beside_the_missing_one(
    make_run, sweep_dir: Path, tmp_path: Path, capsys
) -> None:
    """The verdict counts them: a summary that says "4 new" lists those four, so the mismatch can be read."""
    code, out = compare(capsys, make_run(tmp_path / "one", keep=6), sweep_dir)
    summary = out.strip().splitlines()[-1]
    assert code == 1 and summary.startswith("FAIL: ") and "configuration not in candidate" in out
    new = [line for line in out.splitlines() if "configuration not in baseline" in line]
    counted = re.search(r"(\d+) new", summary)
    assert counted is not None and len(new) == int(counted[1]) > 0, out


def test_improvement_passes_and_an_unexplained_change_fails(make_run, tmp_path: Path, capsys) -> None:
    base = make_run(tmp_path / "base", keep=6)
    mean = json.loads((base / "metrics.json").read_text())["tokens.prompt.mean"]
    better = edited_copy(base, tmp_path / "better", "metrics.json", **{"tokens.prompt.mean": mean - 5})
    code, out = compare(capsys, base, better)
    assert code == 0 and "improved" in out
    changed = edited_copy(base, tmp_path / "changed", "metrics.json", calls=1)
    code, out = compare(capsys, base, changed)
    assert code == 1 and "CHANGED" in out


def test_latency_is_compared_as_a_ratio_to_the_same_run_reference(make_run, tmp_path: Path, capsys) -> None:
    base = make_run(tmp_path / "base", keep=6)
    edit_json(base / "latency.json", **{"latency.context.p95_us": 1000.0, "latency.reference_us": 5000.0})
    # everything 4x slower on a slower machine: same ratio, passes
    machine = {"latency.context.p95_us": 4000.0, "latency.reference_us": 20000.0}
    slow_machine = edited_copy(base, tmp_path / "slow_machine", "latency.json", **machine)
    assert compare(capsys, base, slow_machine)[0] == 0
    # the strategy 4x slower on the same machine: shown, and fails when latency is gated (--latency)
    slower_code = edited_copy(base, tmp_path / "slower_code", "latency.json", **{"latency.context.p95_us": 4000.0})
    code, out = compare(capsys, base, slower_code)
    assert code == 0 and "slower" in out and "x4.00" in out and "not gated" in out
    code, out = compare(capsys, base, slower_code, "--latency")
    assert code == 1 and "latency.context.p95_us" in out and "x4.00" in out and "REGRESSION" in out
    # or only some latencies, by a tolerances rule
    rules = tmp_path / "tolerances.yaml"
    rules.write_text("rules:\n  - {pattern: 'latency.context.*', ratio_to: latency.reference_us, min_value: 200}\n")
    code, out = compare(capsys, base, slower_code, "--tolerances", rules)
    assert code == 1 and "REGRESSION" in out


def test_sweeps_compare_by_label_and_a_failed_config_fails(sweep_dir: Path, tmp_path: Path, capsys) -> None:
    assert compare(capsys, sweep_dir, sweep_dir)[0] == 0
    cand = tmp_path / "cand"
    shutil.copytree(sweep_dir, cand)
    failed = job_dir(cand, 1)
    shutil.rmtree(failed)
    failed.mkdir()
    (failed / "error.json").write_text(
        json.dumps({"type": "KeyError", "message": "boom", "overrides": ["context.keep=6", "context.summarize=False"]})
    )
    code, out = compare(capsys, sweep_dir, cand)
    assert code == 1 and "context.keep=6 context.summarize=False" in out and "boom" in out
    # the other way round, the configuration that failed runs now: an improvement, not a missing run
    baseline = tmp_path / "baseline.json"  # the failure recorded as the candidate had it, as asked
    assert compare(capsys, baseline, cand, "--update", "--keep-failed")[0] == 0
    for base in (cand, baseline):
        code, out = compare(capsys, base, sweep_dir)
        row = next(line for line in out.splitlines() if "context.keep=6 context.summarize=False" in line)
        assert code == 0 and "| improved " in row and "failed in the baseline (KeyError: boom)" in row, out


def test_update_refuses_a_failed_configuration_unless_asked(sweep_dir: Path, tmp_path: Path, capsys) -> None:
    """A failure written to the baseline would pass as long as it fails the same way: kept only by --keep-failed."""
    baseline = tmp_path / "baseline.json"
    code, _, err = compare_streams(capsys, baseline, sweep_dir, "--update")
    said = (
        f"memlab: error: {sweep_dir}: 1 configuration failed (context.keep=99 context.summarize=False); "
        f"{baseline} was not written (--keep-failed records failures in it)\n"
    )
    assert code == 2 and err == said and not baseline.exists()
    failed_run = job_dir(sweep_dir, 4)  # one failed run: named by its folder
    code, _, err = compare_streams(capsys, baseline, failed_run, "--update")
    assert code == 2 and f"{failed_run}: the run failed; {baseline} was not written" in err
    assert not baseline.exists()
    code, _, err = compare_streams(capsys, baseline, sweep_dir, "--keep-failed")
    assert code == 2 and "--keep-failed goes with --update" in err
    assert compare(capsys, baseline, sweep_dir, "--update", "--keep-failed")[0] == 0
    recorded = json.loads(baseline.read_text())["runs"]["context.keep=99 context.summarize=False"]
    assert recorded == {"error": "FileNotFoundError: no such file: /nonexistent.json"}


def test_committed_baseline_round_trip(sweep_dir: Path, tmp_path: Path, capsys) -> None:
    baseline = tmp_path / "baselines" / "ci.json"
    assert compare(capsys, baseline, sweep_dir, "--update", "--keep-failed")[0] == 0
    data = json.loads(baseline.read_text())
    assert set(data["runs"]) >= {"context.keep=6 context.summarize=False"}
    assert not any(k.startswith("latency.") for run in data["runs"].values() for k in run)
    assert compare(capsys, baseline, sweep_dir)[0] == 0
    run = data["runs"]["context.keep=12 context.summarize=False"]
    run["tokens.prompt.mean"] += 1
    baseline.write_text(json.dumps(data))
    code, out = compare(capsys, baseline, sweep_dir)
    assert code == 0 and "improved" in out  # the candidate uses fewer tokens than the edited baseline


def test_missing_metric_fails(tmp_path: Path) -> None:
    rules = load_rules()
    rows = compare_sides({"": {"calls": 3, "summary.count": 1}}, {"": {"calls": 3}}, rules)
    assert [(r.metric, r.status) for r in rows] == [("calls", "ok"), ("summary.count", "missing")]


def test_bad_tolerances_name_the_file_and_key(tmp_path: Path) -> None:
    bad = tmp_path / "tol.yaml"
    bad.write_text("rules:\n  - {pattern: 'x', beter: higher}\n")
    with pytest.raises(MemlabError, match=r"tol\.yaml: rules\[0\] has unknown key\(s\) \['beter'\]"):
        load_rules(bad)
    unclosed = tmp_path / "unclosed.yaml"
    unclosed.write_text("rules: [\n")
    with pytest.raises(MemlabError) as error:  # one line that says what and where, not PyYAML's five
        load_rules(unclosed)
    said = "expected the node content, but found '<stream end>' at line 2, column 1"
    assert str(error.value) == f"{unclosed}: cannot read tolerances ({said})"
    with pytest.raises(MemlabError, match="nowhere: no such file or directory"):
        load_side(tmp_path / "nowhere")


def test_an_infinite_value_is_a_change_as_nan_is(make_run, tmp_path: Path, capsys) -> None:
    """The defect: Infinity (fewer prompt tokens than any) and -Infinity (a retention beyond any) read as improved."""
    base = make_run(tmp_path / "base", keep=6)
    cand = tmp_path / "cand"
    shutil.copytree(base, cand)
    text = (cand / "metrics.json").read_text()
    metrics = json.loads(text)
    for name, value in (("tokens.prompt.mean", "-Infinity"), ("context.evidence_retention", "Infinity")):
        text = text.replace(f'"{name}": {json.dumps(metrics[name])}', f'"{name}": {value}', 1)
    (cand / "metrics.json").write_text(text)
    code, out = compare(capsys, base, cand / "metrics.json")
    names = ("| tokens.prompt.mean ", "| context.evidence_retention ")
    rows = [line for line in out.splitlines() if any(name in line for name in names)]
    assert code == 1 and len(rows) == 2, out
    assert all("| CHANGED " in r and "candidate: not a finite number" in r for r in rows), rows
    assert "improved" not in out, out
    code, out = compare(capsys, base, cand / "metrics.json", "--format", "json")

    def refuse(constant: str) -> None:
        raise AssertionError(f"{constant} in the JSON output")

    assert code == 1 and not json.loads(out, parse_constant=refuse)["passed"]


def test_latencies_are_not_gated_where_the_sides_caches_answered_different_calls(
    make_run, tmp_path: Path, capsys
) -> None:
    """The defect: one configuration run at another place in a sweep's order (caches warmed by the jobs before it:
    latency.cached_calls 16 vs 3) failed `--latency` with latency "regressions" of x200."""
    base = make_run(tmp_path / "base", keep=6)
    edit_json(
        base / "latency.json",
        **{"latency.context.p95_us": 1000.0, "latency.reference_us": 5000.0, "latency.cached_calls": 3},
    )
    changes = {"latency.context.p95_us": 4000.0, "latency.cached_calls": 16}
    warm = edited_copy(base, tmp_path / "warm", "latency.json", **changes)
    code, out, err = compare_streams(capsys, base, warm, "--latency")
    row = next(line for line in out.splitlines() if "| latency.context.p95_us " in line)
    assert code == 0 and "| ungated " in row, out
    assert "regression: x4.00 relative to latency.reference_us; not gated: latency.cached_calls 3 vs 16" in row
    assert err.startswith(
        "memlab: WARNING: the sides' caches answered different numbers of model calls (latency.cached_calls 3 vs 16)"
    ), err
    edit_json(warm / "latency.json", **{"latency.cached_calls": 3})  # the same calls cached: gated, as asked
    code, out = compare(capsys, base, warm, "--latency")
    assert code == 1 and "REGRESSION" in out
