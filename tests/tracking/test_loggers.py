"""The `logger` group on real runs: MLflow's own client reads back what `logger=mlflow` logged, and
`logger=csv` appends one row per run (two runs, a parallel sweep, writers racing in several processes)."""

from __future__ import annotations

import csv
import json
import multiprocessing
import os
import subprocess
import sys
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
import yaml
from csv_writers import log_runs
from entries import options

from memlab.errors import MemlabError, MissingExtraError
from memlab.experiment import instantiate
from memlab.metrics import registry
from memlab.tracking import FinishedRun, RunLogger, from_mlflow_name, mlflow_name, now
from memlab.tracking.mlflow_log import mlflow_metrics

ROOT = Path(__file__).resolve().parents[2]
LONG_PROMPT = "Answer briefly. " * 500  # 8,000 characters: over MLflow's 6,000-character param limit
# The runs' output_dir is fixed so that the long system prompt stays out of the folder name.
TINY = ("debug=default", "sim.workers=1")


def memlab(*args: str, cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    full_env = {**os.environ, "PYTHONPATH": str(ROOT), "CI": "1", **env}
    return subprocess.run(
        [sys.executable, "-m", "memlab", *args], cwd=cwd, env=full_env, capture_output=True, text=True, timeout=300
    )


def leaves(node: Any, prefix: str = "") -> dict[str, Any]:
    """The config's leaves by dotted path, written independently of memlab.tracking.flatten."""
    if isinstance(node, dict) and node:
        return {k: v for key, child in node.items() for k, v in leaves(child, f"{prefix}{key}.").items()}
    if isinstance(node, list) and node:
        return {k: v for i, child in enumerate(node) for k, v in leaves(child, f"{prefix}{i}.").items()}
    return {prefix[:-1]: node}


def test_mlflow_client_lists_the_run_with_every_metric_and_the_resolved_config(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, memlab_run_err: Any
) -> None:
    """The run in this process (`memlab_run_err`): mlflow, imported here anyway, is not imported a second time."""
    mlflow = pytest.importorskip("mlflow", reason="mlflow is not installed: pip install 'memlab[mlflow]'")
    monkeypatch.setenv("CI", "1")
    run_dir = tmp_path / "run"
    args = ("logger=mlflow", *TINY, "longterm=chat", f"system_prompt={LONG_PROMPT}", f"output_dir={run_dir}")
    status, err = memlab_run_err(*args, "tags=[nightly]")
    assert status == 0, err
    assert "WARNING" not in err
    client = mlflow.tracking.MlflowClient(tracking_uri=f"sqlite:///{tmp_path}/reports/mlflow.db")  # the default store
    experiment = client.get_experiment_by_name("debug")  # the run's name (debug=default names it)
    [logged] = client.search_runs([experiment.experiment_id])

    metrics = json.loads((run_dir / "metrics.json").read_text())
    expected = {name: value for name, value in metrics.items() if value is not None}
    assert len(expected) > 100 and any("@" in name for name in expected)
    assert {from_mlflow_name(k): v for k, v in logged.data.metrics.items()} == pytest.approx(expected)
    assert logged.data.metrics["longterm.recall_at_10"] == metrics["longterm.recall@10"]

    config = leaves(yaml.safe_load((run_dir / "config.yaml").read_text()))
    params = logged.data.params
    assert set(params) == {mlflow_name(k) for k in config}
    assert params["sim.workers"] == "1" and params["llm._target_"] == config["llm._target_"]
    assert params["dataset.dialogues"] == str(config["dataset.dialogues"])
    assert params["system_prompt"] == LONG_PROMPT[:6000]
    tags = logged.data.tags
    assert tags["memlab.truncated_params"] == "system_prompt"
    assert tags["memlab.seed"] == "0" and tags["memlab.name"] == "debug" and tags["memlab.tags"] == "nightly"
    assert tags["mlflow.source.git.commit"] == json.loads((run_dir / "manifest.json").read_text())["git_revision"]
    assert tags["memlab.overrides"].startswith("logger=mlflow debug=default")
    artifacts = {a.path for a in client.list_artifacts(logged.info.run_id)}
    assert {"report.html", "report.md", "metrics.json", "config.yaml", "manifest.json"} <= artifacts


def test_without_mlflow_the_run_stops_at_start_with_the_install_command(tmp_path: Path) -> None:
    blocked = tmp_path / "blocked"  # an `mlflow` that cannot be imported, first on the path
    (blocked / "mlflow").mkdir(parents=True)
    (blocked / "mlflow" / "__init__.py").write_text("raise ImportError('no mlflow here')\n")
    for sweep in ((), ("-m", "context=none,trim")):  # a sweep stops at its first job, not a failed job each
        out = memlab("run", *sweep, "logger=mlflow", *TINY, cwd=tmp_path, PYTHONPATH=f"{blocked}{os.pathsep}{ROOT}")
        assert out.returncode == 2, out.stderr
        assert out.stderr.strip().splitlines()[-1] == (
            "memlab: error: logger=mlflow needs MLflow, which is not installed: pip install 'memlab[mlflow]'"
        )
        assert not (tmp_path / "reports").exists()  # nothing replayed, nothing written


@pytest.mark.parametrize("name", options("logger"))
def test_every_logger_entry_records_runs_under_reports_only(
    make_config: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    """The group's contract: a RunLogger records run after run and writes under reports/ only (none: nothing)."""
    monkeypatch.chdir(tmp_path)  # the entries' default paths are relative: they land here
    try:
        logger = instantiate(make_config(f"logger={name}").logger)
    except MissingExtraError as e:
        pytest.skip(str(e))
    assert isinstance(logger, RunLogger)
    run_dir = tmp_path / "reports" / "runs" / "one"
    run_dir.mkdir(parents=True)
    (run_dir / "metrics.json").write_text('{"calls": 3, "longterm.recall@10": 0.5}\n')
    metrics, config = {"calls": 3, "longterm.recall@10": 0.5}, {"seed": 1, "context": {"max_tokens": 2000}}
    for _ in range(2):
        logger.log_run(
            FinishedRun(run_dir, "contract", now(), ("seed=1",), metrics, config, {"seed": 1}, ("metrics.json",))
        )
    made = {p.relative_to(tmp_path).parts[0] for p in tmp_path.rglob("*")}
    assert made == {"reports"}
    written = {p for p in (tmp_path / "reports").iterdir() if p.name != "runs"}
    assert bool(written) == (name != "none")


def registry_names() -> list[str]:
    """Every registered metric, a pattern's `*` as each K memlab writes, with a category suffix too."""
    names = [m.name.replace("*", str(k)) for m in registry.METRICS for k in (1, 5, 10, 20)]
    return sorted({*names, *(f"{n}.cat_multi-hop" for n in names), *(f"{n}.cat_single-session-user" for n in names)})


def test_mlflow_names_are_one_to_one_and_map_back() -> None:
    names = registry_names()
    mapped = [mlflow_name(n) for n in names]
    assert len(set(mapped)) == len(names)  # no two memlab names share an MLflow name
    assert [from_mlflow_name(m) for m in mapped] == names
    assert all(set(m) <= set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-/ :") for m in mapped)
    assert mlflow_name("longterm.recall@10") == "longterm.recall_at_10"


def test_a_name_that_would_not_map_back_is_refused() -> None:
    with pytest.raises(MemlabError, match=r"'x_at_1' has no one-to-one MLflow name"):
        mlflow_metrics({"x@1": 0.5, "x_at_1": 0.25})


def csv_rows(path: Path) -> list[dict[str, str]]:
    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def test_csv_appends_one_row_per_run_with_its_metrics(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, memlab_cli: Any
) -> None:
    """Two runs one after the other, in this process (writers in several processes: the tests below)."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("CI", "1")
    for strategy in ("none", "trim"):
        assert memlab_cli("run", "logger=csv", *TINY, f"context={strategy}") == 0
    rows = csv_rows(tmp_path / "reports" / "runs.csv")
    assert [r["overrides"] for r in rows] == [f"logger=csv {' '.join(TINY)} context={s}" for s in ("none", "trim")]
    for row in rows:
        metrics = json.loads((Path(row["run_dir"]) / "metrics.json").read_text())
        assert {k: row[k] for k in metrics} == {k: "" if v is None else str(v) for k, v in metrics.items()}
        assert row["name"] == "debug" and datetime.fromisoformat(row["time"]).tzinfo is not None


def test_a_csv_table_that_cannot_be_written_leaves_no_staged_copy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, memlab_run_err: Any
) -> None:
    """`logger.path` naming a folder: the run warns and is published; a hidden staged copy of the table, holding a
    whole CSV, was left beside it on every run."""
    monkeypatch.setenv("CI", "1")
    (tmp_path / "table").mkdir()
    status, err = memlab_run_err(
        "logger=csv", f"logger.path={tmp_path / 'table'}", *TINY, f"output_dir={tmp_path / 'r'}"
    )
    assert status == 0 and "memlab: WARNING: logger CsvLogger did not record" in err, err
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".table.")] == []  # (table.lock is filelock's)


def test_a_csv_table_rewritten_for_a_new_metric_keeps_its_modes(tmp_path: Path) -> None:
    """The defect: a rewrite (a metric the header lacks) made the table 0600, unreadable to the runner's other users."""
    from memlab.tracking.csv_log import CsvLogger

    table = tmp_path / "runs.csv"

    def log(metrics: dict[str, float]) -> None:
        CsvLogger(str(table)).log_run(FinishedRun(tmp_path, "r", now(), (), metrics, {}, {}, ()))

    umask = os.umask(0o022)
    try:
        log({"calls": 1.0})
        assert table.stat().st_mode & 0o777 == 0o644  # made with the umask's modes
        log({"calls": 2.0, "new.metric": 1.0})
        assert table.stat().st_mode & 0o777 == 0o644
        table.chmod(0o640)
        log({"calls": 3.0, "newer.metric": 1.0})
        assert table.stat().st_mode & 0o777 == 0o640  # the table's own modes, kept
    finally:
        os.umask(umask)
    assert [row["calls"] for row in csv_rows(table)] == ["1.0", "2.0", "3.0"]


def test_csv_gets_one_row_per_job_of_a_parallel_sweep(tmp_path: Path) -> None:
    table = tmp_path / "all_runs.csv"
    out = memlab(
        "run",
        "-m",
        "hydra/launcher=joblib",
        "hydra.launcher.n_jobs=2",
        "logger=csv",
        f"logger.path={table}",
        *TINY,
        "context=none,trim",
        f"hydra.sweep.dir={tmp_path / 'sweep'}",
        cwd=tmp_path,
    )
    assert out.returncode == 0, out.stderr
    rows = csv_rows(table)
    assert sorted(Path(r["run_dir"]).name for r in rows) == ["0_context=none", "1_context=trim"]
    for row in rows:
        metrics = json.loads((Path(row["run_dir"]) / "metrics.json").read_text())
        assert row["tokens.prompt.mean"] == str(metrics["tokens.prompt.mean"])


def test_csv_writers_in_many_processes_lose_and_mix_no_row(tmp_path: Path) -> None:
    path, writers, each = tmp_path / "runs.csv", 6, 15
    context = multiprocessing.get_context("spawn")
    start = context.Event()
    procs = [
        context.Process(target=log_runs, args=(str(path), range(w * each, (w + 1) * each), start))
        for w in range(writers)
    ]
    for p in procs:
        p.start()
    start.set()
    for p in procs:
        p.join(timeout=120)
        assert p.exitcode == 0
    rows = csv_rows(path)
    assert sorted(int(r["calls"]) for r in rows) == list(range(writers * each))
    for row in rows:
        index = int(row["calls"])
        assert row["run_dir"] == f"/runs/{index}" and row["overrides"] == f"seed={index}"
        assert float(row["tokens.prompt.mean"]) == index / 3
        extras = {k for k, v in row.items() if k.startswith("extra.") and v}
        assert extras == ({f"extra.{index}"} if index % 5 == 0 else set())


def test_a_tracking_server_that_fails_is_retried_as_configured_and_the_run_goes_on(
    tmp_path: Path, memlab_run_err: Any
) -> None:
    """MLflow's own retries (7, with backoff) held each run about 4 minutes on a server that was down; a real HTTP
    server that answers 503 counts the requests `logger.http_retries=1` lets through: the first and one retry."""
    pytest.importorskip("mlflow", reason="mlflow is not installed: pip install 'memlab[mlflow]'")
    import http.server
    import threading

    hits: list[str] = []

    class Down(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            hits.append(self.path)
            self.send_error(503)

        def log_message(self, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Down)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        uri = f"logger.tracking_uri=http://127.0.0.1:{server.server_address[1]}"
        status, err = memlab_run_err(
            "logger=mlflow", uri, "logger.http_retries=1", *TINY, f"output_dir={tmp_path / 'r'}"
        )
    finally:
        server.shutdown()
    assert status == 0 and "memlab: WARNING: logger MlflowLogger did not record" in err, err
    assert len(hits) == 2 and all("experiments/get-by-name" in h for h in hits), hits
    assert "MLFLOW_HTTP_REQUEST_MAX_RETRIES" not in os.environ  # set for the logger's requests only
    assert (tmp_path / "r" / "metrics.json").is_file()  # the run was published all the same
