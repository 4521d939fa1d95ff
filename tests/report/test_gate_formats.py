"""`memlab compare --format json|junit`: the same verdict as the table, in the shapes CI systems read."""

from __future__ import annotations

import json
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from simulated_runs import job_dir

from memlab.cli import main
from memlab.report.gate import compare_sides, load_rules, load_side


def _compare(capsys: pytest.CaptureFixture[str], *args: object) -> tuple[int, str]:
    with pytest.raises(SystemExit) as exit_info:
        main(["compare", *map(str, args)])
    return int(exit_info.value.code or 0), capsys.readouterr().out


@pytest.fixture
def regressed(sweep_dir: Path, tmp_path: Path) -> Path:
    """The sweep with one configuration's prompt tokens raised by half: a regression."""
    cand = tmp_path / "cand"
    shutil.copytree(sweep_dir, cand)
    metrics = job_dir(cand, 2) / "metrics.json"
    data = json.loads(metrics.read_text())
    data["tokens.prompt.mean"] *= 1.5
    metrics.write_text(json.dumps(data))
    return cand


def test_json_and_junit_agree_with_the_gate(sweep_dir: Path, regressed: Path, capsys) -> None:
    rows = compare_sides(load_side(sweep_dir), load_side(regressed), load_rules())
    failing = {(r.config, r.metric) for r in rows if r.status in ("regression", "changed", "missing")}
    assert ("context.keep=12 context.summarize=False", "tokens.prompt.mean") in failing

    code, out = _compare(capsys, sweep_dir, regressed, "--format", "json")
    data = json.loads(out)
    assert code == 1 and data["passed"] is False and len(data["rows"]) == len(rows)
    assert {(r["config"], r["metric"]) for r in data["rows"] if r["status"] == "regression"} <= failing

    code, out = _compare(capsys, sweep_dir, regressed, "--format", "junit")
    root = ET.fromstring(out)
    cases = root.findall("./testsuite/testcase")
    assert code == 1 and len(cases) == len(rows) and int(root.get("tests", "0")) == len(rows)
    failed = {(c.get("classname"), c.get("name")) for c in cases if c.find("failure") is not None}
    assert failed == failing and int(root.get("failures", "0")) == len(failing)


def test_identical_sides_pass_in_every_format(sweep_dir: Path, capsys) -> None:
    assert json.loads(_compare(capsys, sweep_dir, sweep_dir, "--format", "json")[1])["passed"] is True
    code, out = _compare(capsys, sweep_dir, sweep_dir, "--format", "junit")
    assert code == 0 and ET.fromstring(out).get("failures") == "0"
