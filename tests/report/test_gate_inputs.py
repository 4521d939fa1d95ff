"""`memlab compare`'s inputs: one that is not a baseline or a run, or cannot be read, is one line and status 2.

A gate that read `{}` as a baseline passed every candidate (every metric "new", JUnit with 0 failures), and one
that crashed exited 1, the status of a regression: CI could not tell a broken gate from a change that regressed.
The baselines memlab writes (`--update`) and those committed under experiments/baselines/ still load and pass.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from gate_cli import compare_streams as compare

from memlab.report.gate import BASELINE_FORMAT, load_side

BASELINES = Path(__file__).resolve().parents[2] / "experiments" / "baselines"


def refused(capsys: pytest.CaptureFixture[str], *args: object) -> str:
    """The one line `memlab compare ARGS` refuses them with, after checking it exits 2 and prints nothing else."""
    code, out, err = compare(capsys, *args)
    assert code == 2 and out == "" and len(err.splitlines()) == 1, (code, out, err)
    assert err.startswith("memlab: error: "), err
    return err.removeprefix("memlab: error: ").strip()


@pytest.fixture
def run(make_run: Callable[..., Path], tmp_path: Path) -> Path:
    return make_run(tmp_path / "run", keep=6)


@pytest.fixture
def written(run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    """The baseline `--update` writes from `run`, as JSON."""
    path = tmp_path / "written.json"
    assert compare(capsys, path, run, "--update")[0] == 0
    return json.loads(path.read_text())


NOT_BASELINES: dict[str, tuple[Callable[[dict[str, Any]], Any], str]] = {
    # name: (the written baseline -> the file's content, what the error says)
    "empty object": (lambda b: {}, "not a memlab baseline: no 'format' (this memlab reads format 1"),
    "no format": (lambda b: {"runs": b["runs"]}, "no 'format' (this memlab reads format 1"),
    "unknown format": (lambda b: {**b, "format": 99}, "baseline format 99; this memlab reads format 1"),
    "format as text": (lambda b: {**b, "format": "1"}, 'baseline format "1"; this memlab reads format 1'),
    "format true": (lambda b: {**b, "format": True}, "baseline format true; this memlab reads format 1"),
    "no runs": (lambda b: {"format": b["format"]}, "no 'runs' object of configurations"),
    "runs a list": (lambda b: {**b, "runs": list(b["runs"].values())}, "no 'runs' object of configurations"),
    "no configuration": (lambda b: {**b, "runs": {}}, "holds no configuration"),
    "metrics a number": (lambda b: {**b, "runs": {"": 5}}, 'runs[""]: expected an object of metrics, got 5'),
    "no metrics": (lambda b: {**b, "runs": {"": {}}}, 'runs[""]: holds no metrics'),
    "only latencies": (lambda b: {**b, "runs": {"": {"latency.context.p95_us": 2.0}}}, 'runs[""]: holds no metrics'),
    "metric as text": (
        lambda b: {**b, "runs": {"": {**b["runs"][""], "calls": "3"}}},
        'runs[""]: calls: expected a number or null, got "3"',
    ),
    "a list": (lambda b: [b], "not a memlab baseline: expected a JSON object"),
    "provenance a list": (lambda b: {**b, "provenance": []}, "provenance: expected an object of configurations"),
    "provenance of no run": (
        lambda b: {**b, "provenance": {"other": {}}},
        "provenance[\"other\"]: no such configuration in 'runs'",
    ),
    "provenance unknown key": (
        lambda b: {**b, "provenance": {"": {"seed": "1"}}},
        'provenance[""]: expected strings for data_sha256, tokenizer, pricing.model, got {"seed": "1"}',
    ),
}


@pytest.mark.parametrize("name", list(NOT_BASELINES))
def test_a_file_that_is_not_a_memlab_baseline_is_refused(
    name: str, written: dict[str, Any], run: Path, tmp_path: Path, capsys
) -> None:
    make, said = NOT_BASELINES[name]
    baseline = tmp_path / "baseline.json"
    baseline.write_text(json.dumps(make(written)))
    line = refused(capsys, baseline, run)
    assert line.startswith(f"{baseline}: ") and said in line, line
    assert refused(capsys, baseline, run, "--format", "junit") == line  # no report with 0 failures


def test_a_runs_latency_json_is_not_a_baseline(run: Path, capsys) -> None:
    line = refused(capsys, run / "latency.json", run)
    assert line.startswith(f"{run / 'latency.json'}: not a memlab baseline: no 'format'"), line


def test_unreadable_or_absent_files_are_one_line(run: Path, tmp_path: Path, capsys) -> None:
    undecodable = tmp_path / "bytes.json"
    undecodable.write_bytes(b"\xff\xfe")
    assert refused(capsys, undecodable, run).startswith(f"{undecodable}: cannot be read (UnicodeDecodeError: ")
    truncated = tmp_path / "truncated.json"
    truncated.write_text('{"format": 1, "runs": {')
    assert refused(capsys, truncated, run).startswith(f"{truncated}: not JSON (")
    missing = tmp_path / "missing.json"
    assert refused(capsys, missing, run) == f"{missing}: no such file or directory"
    assert refused(capsys, run, missing) == f"{missing}: no such file or directory"


def test_a_side_with_no_run_is_refused(run: Path, tmp_path: Path, capsys) -> None:
    """An empty folder, a sweep whose jobs never started, a run whose metrics.json is `{}`: never all new or missing."""
    empty, sweep, blank = tmp_path / "empty", tmp_path / "sweep", tmp_path / "blank"
    empty.mkdir()
    sweep.mkdir()
    (sweep / "multirun.yaml").write_text("hydra: {}\n")
    shutil.copytree(run, blank)
    (blank / "metrics.json").write_text("{}")
    for side in (empty, sweep):
        assert refused(capsys, side, run).startswith(f"{side}: neither a run directory nor a sweep directory")
        assert refused(capsys, run, side).startswith(f"{side}: neither a run directory nor a sweep directory")
    assert refused(capsys, blank, run) == f"{blank / 'metrics.json'}: holds no metrics"
    assert refused(capsys, run, blank) == f"{blank / 'metrics.json'}: holds no metrics"


def test_a_candidate_may_be_a_runs_metrics_json_but_not_its_latency_json(
    run: Path, written: dict[str, Any], tmp_path: Path, capsys
) -> None:
    assert compare(capsys, tmp_path / "written.json", run / "metrics.json")[0] == 0
    # against its own run folder: the folder's latencies (latency.cached_calls, a count) are not missing from it
    assert compare(capsys, run, run / "metrics.json")[0] == 0
    line = refused(capsys, run, run / "latency.json")
    assert line == f"{run / 'latency.json'}: holds only latencies (a run's latency.json? give its run directory)", line


@pytest.mark.parametrize("path", sorted(BASELINES.glob("*.json")), ids=lambda p: p.name)
def test_committed_baselines_load_and_pass_against_themselves(path: Path, capsys) -> None:
    data = json.loads(path.read_text())
    assert data["format"] == BASELINE_FORMAT and load_side(path) == data["runs"]
    code, out, _ = compare(capsys, path, path)
    assert code == 0 and out.strip().splitlines()[-1].startswith("PASS: "), out


def test_baselines_memlab_writes_load(
    run: Path, sweep_dir: Path, written: dict[str, Any], tmp_path: Path, capsys
) -> None:
    assert load_side(tmp_path / "written.json") == written["runs"]
    assert compare(capsys, tmp_path / "written.json", run)[0] == 0
    sweep = tmp_path / "sweep.json"  # with the sweep's failed job recorded, as asked
    assert compare(capsys, sweep, sweep_dir, "--update", "--keep-failed")[0] == 0
    assert compare(capsys, sweep, sweep_dir)[0] == 0
