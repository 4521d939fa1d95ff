"""`memlab compare --tolerances`: a rule changes only the fields it sets; a value that cannot be a tolerance is refused.

A rule used to replace the registry's whole rule, so a field it left out fell back to the dataclass defaults (no
direction, no latency ratio): `{pattern: "context.*", rel: 0.5}` made an improvement of evidence retention a
CHANGED failure, and `max_increase: 1000` on a latency failed a speed-up.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from gate_cli import compare, compare_streams, edited_copy

from memlab.errors import MemlabError
from memlab.report.gate import load_rules

RETENTION = "context.evidence_retention"


def row(out: str, metric: str) -> str:
    return next(line for line in out.splitlines() if f"| {metric} " in line)


def tolerances(tmp_path: Path, rule: str) -> Path:
    path = tmp_path / "tolerances.yaml"
    path.write_text(f"rules:\n  - {rule}\n")
    return path


def test_a_rule_keeps_the_registrys_direction(make_run: Callable[..., Path], tmp_path: Path, capsys) -> None:
    base = make_run(tmp_path / "base", keep=6)
    retention = json.loads((base / "metrics.json").read_text())[RETENTION]
    better = edited_copy(base, tmp_path / "better", "metrics.json", **{RETENTION: retention + 0.3})
    worse = edited_copy(base, tmp_path / "worse", "metrics.json", **{RETENTION: retention - 0.3})
    within = edited_copy(base, tmp_path / "within", "metrics.json", **{RETENTION: retention - 0.1})
    rules = tolerances(tmp_path, "{pattern: 'context.*', rel: 0.5}")
    code, out = compare(capsys, base, better, "--tolerances", rules, "--all")
    assert code == 0 and "| improved " in row(out, RETENTION), out
    code, out = compare(capsys, base, worse, "--tolerances", rules)
    assert code == 1 and "REGRESSION" in row(out, RETENTION), out
    code, out = compare(capsys, base, within, "--tolerances", rules, "--all")  # the rule's rel applies
    assert code == 0 and "| ok " in row(out, RETENTION), out


def test_a_latency_rule_keeps_the_ratio_to_the_reference(make_run: Callable[..., Path], tmp_path: Path, capsys) -> None:
    p95 = "latency.context.p95_us"
    base = edited_copy(
        make_run(tmp_path / "run", keep=6),
        tmp_path / "base",
        "latency.json",
        **{p95: 1000.0, "latency.reference_us": 5000.0},
    )
    faster = edited_copy(base, tmp_path / "faster", "latency.json", **{p95: 500.0})
    slower = edited_copy(base, tmp_path / "slower", "latency.json", **{p95: 4000.0})
    rules = tolerances(tmp_path, "{pattern: 'latency.context.*', max_increase: 1000}")
    code, out = compare(capsys, base, faster, "--tolerances", rules, "--all")
    assert code == 0 and "x0.50 relative to latency.reference_us" in row(out, p95), out
    code, out = compare(capsys, base, slower, "--tolerances", rules, "--all")
    assert code == 0 and "x4.00 relative to latency.reference_us" in row(out, p95), out
    named = tolerances(tmp_path, "{pattern: 'latency.context.*'}")  # gated, by the registry's ratio and limit (3x)
    code, out = compare(capsys, base, slower, "--tolerances", named)
    assert code == 1 and "REGRESSION" in row(out, p95) and "x4.00 relative to latency.reference_us" in row(out, p95)


@pytest.mark.parametrize(
    ("rule", "said"),
    [
        ("{pattern: 'x', abs: -1}", "rules[0].abs=-1; expected a finite number >= 0"),
        ("{pattern: 'x', rel: .nan}", "rules[0].rel=nan; expected a finite number >= 0"),
        ("{pattern: 'x', abs: big}", "rules[0].abs='big'; expected a finite number >= 0"),
        ("{pattern: 'x', abs: 1e-3}", "rules[0].abs='1e-3'; expected a finite number >= 0 (YAML reads 1e-3 as text"),
        ("{pattern: 'x', max_increase: true}", "rules[0].max_increase=True; expected a finite number >= 0"),
        ("{pattern: 'x', skip: 'no'}", "rules[0].skip='no'; expected true or false"),
        ("{pattern: 'x', gate: 1}", "rules[0].gate=1; expected true or false"),
        ("{pattern: 'x', ratio_to: 5}", "rules[0].ratio_to=5; expected a metric's name"),
        ("{pattern: 5}", "rules[0].pattern=5; expected a glob"),
    ],
)
def test_a_value_that_cannot_be_a_tolerance_is_one_line(
    rule: str, said: str, make_run: Callable[..., Path], tmp_path: Path, capsys
) -> None:
    path = tolerances(tmp_path, rule)
    with pytest.raises(MemlabError) as error:
        load_rules(path)
    assert str(error.value).startswith(f"{path}: {said}"), error.value
    run = make_run(tmp_path / "run", keep=6)
    code, out, err = compare_streams(capsys, run, run, "--tolerances", path)
    assert code == 2 and err == f"memlab: error: {error.value}\n" and out == ""


def test_a_ratio_to_no_metric_is_refused_and_a_ratio_that_cannot_be_computed_fails(
    make_run: Callable[..., Path], tmp_path: Path, capsys
) -> None:
    """The defect: a misspelt `ratio_to`, or one that is 0, made the ratio "not comparable" and the metric "ok", so
    ten times the prompt tokens passed."""
    base = make_run(tmp_path / "base", keep=6)
    total = json.loads((base / "metrics.json").read_text())["tokens.prompt.total"]
    x10 = edited_copy(base, tmp_path / "x10", "metrics.json", **{"tokens.prompt.total": total * 10}) / "metrics.json"
    typo = tolerances(tmp_path, "{pattern: 'tokens.prompt.total', ratio_to: 'tokens.full_history.totl'}")
    code, out, err = compare_streams(capsys, base, x10, "--tolerances", typo, "--all")
    said = f"memlab: error: {typo}: rules[0].ratio_to='tokens.full_history.totl': no such metric"
    assert code == 2 and err.startswith(said) and out == "", (code, out, err)
    zero = tolerances(tmp_path, "{pattern: 'tokens.prompt.total', ratio_to: 'summary.count'}")  # 0 in both runs
    code, out = compare(capsys, base, x10, "--tolerances", zero, "--all")
    assert code == 1 and "| CHANGED " in row(out, "tokens.prompt.total"), out
    assert "no ratio: summary.count is 0 in the baseline; summary.count is 0 in the candidate" in out
    code, out = compare(capsys, base, base / "metrics.json", "--tolerances", zero, "--all")  # nothing moved: passes
    assert code == 0 and "| ok " in row(out, "tokens.prompt.total") and "no ratio, unchanged" in out, out


def test_gate_false_shows_what_would_fail_and_never_fails(
    make_run: Callable[..., Path], tmp_path: Path, capsys
) -> None:
    """The defect: under `gate: false` a missing metric read "ok" (hidden) while a regression still failed."""
    base = make_run(tmp_path / "base", keep=6)
    metrics = json.loads((base / "metrics.json").read_text())
    metrics[RETENTION] -= 0.3
    del metrics["context.evidence_in_summary"]
    cand = tmp_path / "cand.json"
    cand.write_text(json.dumps(metrics))
    rules = tolerances(tmp_path, "{pattern: 'context.*', gate: false}")
    code, out = compare(capsys, base, cand, "--tolerances", rules)  # the default table: what is not ok
    assert code == 0 and out.strip().splitlines()[-1].startswith("PASS: ") and "2 ungated" in out, out
    assert "| ungated " in row(out, RETENTION) and "regression: -30 pp; not gated" in row(out, RETENTION)
    assert "missing: not in candidate; not gated" in row(out, "context.evidence_in_summary")
    code, out = compare(capsys, base, cand)  # gated, as by default: both fail
    assert code == 1 and "REGRESSION" in row(out, RETENTION) and "MISSING" in row(out, "context.evidence_in_summary")


def test_a_latency_timed_in_one_side_only_is_shown_unless_under_the_floor(
    make_run: Callable[..., Path], tmp_path: Path, capsys
) -> None:
    """Not gated, a latency only one side timed is shown as ungated; under the 200 µs floor it is timer noise."""
    p95 = "latency.context.p95_us"
    base = edited_copy(make_run(tmp_path / "run", keep=6), tmp_path / "base", "latency.json", **{p95: None})
    for value, shown in ((5000.0, True), (41.0, False)):
        cand = edited_copy(base, tmp_path / f"cand{value:g}", "latency.json", **{p95: value})
        code, out = compare(capsys, base, cand)
        assert code == 0 and (f"| {p95} " in out) == shown, out
        if shown:
            assert "| ungated " in row(out, p95) and "changed: ran in only one; not gated" in row(out, p95)
