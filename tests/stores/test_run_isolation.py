"""Runs on a store that outlives them stay apart (`memlab.stores.scoped`): the same config twice on one
reused SQLite file, PostgreSQL schema or MariaDB database gives the bytes of a run on a store of its own,
two sweep jobs sharing one store never see each other even when they run at once, and only
`sim.reuse_store=true` reads what earlier runs left (the manifest says which scope a run kept to and why
it read earlier state)."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from memlab.errors import MemlabError
from memlab.experiment import run_experiment
from memlab.stores import SqlStore, scoped

# Long-term memory on: the first run's memories were what a second run on the same database read.
RUN = ("longterm=chat", "debug=default")
PUBLISHED = ("metrics.json", "calls.csv", "questions.csv")
SCOPE_LINE = re.compile(r"memlab: run default: writes to the store under scope (run:[0-9a-f]+) .*\n")
SESSIONS_DONE = re.compile(r", (\d+) of 24 sessions done, ")
_ALONE: dict[str, dict[str, bytes]] = {}


def _files(run_dir: Path) -> dict[str, bytes]:
    return {name: (run_dir / name).read_bytes() for name in PUBLISHED}


def _store_of(run_dir: Path) -> dict[str, Any]:
    return dict(json.loads((run_dir / "manifest.json").read_text())["store"])


def alone(make_config: Any, tmp_path: Path) -> dict[str, bytes]:
    """The run on a store of its own (`store=memory`: no scope at all), once per test session."""
    if not _ALONE:
        _ALONE.update(_files(run_experiment(make_config(*RUN), tmp_path / "alone").run_dir))
    return _ALONE


@pytest.mark.parametrize("backend", ["sqlite", "postgres", "mariadb"])
def test_the_same_run_twice_on_one_reused_store_gives_the_same_bytes(
    make_config: Any, isolate: Any, tmp_path: Path, backend: str
) -> None:
    with isolate(backend, tmp_path / "db") as db:
        first = run_experiment(make_config(*RUN, *db.overrides), tmp_path / "first").run_dir
        second = run_experiment(make_config(*RUN, *db.overrides), tmp_path / "second").run_dir
        # nothing the scope adds reaches what the run reports
        assert _files(first) == _files(second) == alone(make_config, tmp_path)
        scopes = [_store_of(first)["scope"], _store_of(second)["scope"]]
        assert scopes[0] != scopes[1] and _store_of(second)["earlier_state"] is None
        stored = [scoped(db.open(), scope).snapshot() for scope in scopes]
    # nor the ids, namespaces and counts stored
    assert stored[0] == stored[1] and stored[0].memories and stored[0].sessions


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_sweep_jobs_sharing_one_store_never_see_each_other(
    make_config: Any, isolate: Any, tmp_path: Path, backend: str
) -> None:
    """Two jobs of one config (only their tags differ) in two joblib processes at once, on one database."""
    sweep = tmp_path / "sweep"
    with isolate(backend, tmp_path / "db") as db:
        done = subprocess.run(
            [sys.executable, "-m", "memlab", "run", "-m", "hydra/launcher=joblib", "hydra.launcher.n_jobs=2",
             *RUN, *db.overrides, "tags=[a],[b]", f"hydra.sweep.dir={sweep}"],
            capture_output=True, text=True, cwd=tmp_path, timeout=600,
            env={**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True", "HF_HUB_OFFLINE": "1"},
        )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    jobs = sorted(path.parent for path in sweep.rglob("metrics.json"))
    assert [_files(job) for job in jobs] == [alone(make_config, tmp_path)] * 2
    assert len({_store_of(job)["scope"] for job in jobs}) == 2


def test_only_reuse_store_reads_what_earlier_runs_left(make_config: Any, tmp_path: Path) -> None:
    db = tmp_path / "warm.sqlite"
    warm = (*RUN, "store=sqlite", f"store.path={db}", "sim.reuse_store=true")
    filled = run_experiment(make_config(*warm), tmp_path / "fill").run_dir
    assert _files(filled) == alone(make_config, tmp_path)  # the store was empty
    assert _store_of(filled) == {"scope": None, "earlier_state": None}  # and its manifest says no earlier state
    again = run_experiment(make_config(*warm), tmp_path / "again")
    assert _store_of(again.run_dir) == {
        "scope": None,
        "earlier_state": "sim.reuse_store=true: the store's shared rows, as earlier runs left them",
    }
    duplicates = json.loads(_files(filled)["metrics.json"])["longterm.duplicates"]
    assert again.metrics["longterm.duplicates"] > duplicates  # it met the first run's memories again
    isolated = run_experiment(make_config(*RUN, "store=sqlite", f"store.path={db}"), tmp_path / "own").run_dir
    assert _files(isolated) == alone(make_config, tmp_path)  # a run of its own does not see the warm rows
    with pytest.raises(MemlabError, match=r"sim\.reuse_store=true cannot be combined with sim\.stop_after_session"):
        run_experiment(make_config(*warm, "sim.stop_after_session=1"), tmp_path / "stopped")
    # The defect: on a store in the run's process the run said earlier runs had shaped it, and nothing had.
    with pytest.raises(MemlabError, match=r"sim\.reuse_store=true: the store lives in this run's process"):
        run_experiment(make_config(*RUN, "store=memory", "sim.reuse_store=true"), tmp_path / "memory")
    assert not (tmp_path / "memory").exists()


def test_a_warm_run_says_on_screen_whether_earlier_runs_shaped_it(
    memlab_cli: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    """Only the manifest said why a warm run's recall fell (it meets its earlier memories as duplicates); a warm
    run on a store that held nothing said earlier runs had shaped it (a relative store.path: a new file each run)."""
    monkeypatch.chdir(tmp_path)
    db, runs = tmp_path / "warm.sqlite", tmp_path / "runs"
    shaped = "memlab: note: sim.reuse_store=true: the run read and wrote what earlier runs left in the store"
    empty = "memlab: note: sim.reuse_store=true: the store held nothing when the run started"
    relative = " (store.path=warm.sqlite is relative: each run's store is a new file in its own folder;"
    # A scoped run's rows are not what a warm run reads: the first warm run still finds the store empty.
    for i, (path, warm, said) in enumerate(
        [
            (db, "sim.reuse_store=false", None),
            (db, "sim.reuse_store=true", empty + "\n"),
            (db, "sim.reuse_store=true", shaped),
            ("warm.sqlite", "sim.reuse_store=true", empty + relative),
            ("warm.sqlite", "sim.reuse_store=true", empty + relative),
        ]
    ):
        capsys.readouterr()
        run_dir = f"hydra.run.dir={runs / str(i)}"
        args = (*RUN, "store=sqlite", f"store.path={path}", warm, run_dir, "report.plots=false")
        assert memlab_cli("run", *args) == 0
        err = capsys.readouterr().err
        assert (said in err) if said else "memlab: note: sim.reuse_store" not in err, err
        assert (_store_of(runs / str(i))["earlier_state"] is not None) == (said == shaped)


def test_a_killed_runs_scope_is_named_before_it_writes_and_holds_what_it_left(tmp_path: Path) -> None:
    """A run killed part way (kill -9) publishes no manifest, and nothing else named the scope its rows stay under:
    the next run said nothing, run.log is written at the end. The run names it on stderr before it writes a row.

    The kill follows a heartbeat line saying 1 of 24 sessions is done (about 10 s of replay left at that point)."""
    db, run_dir = tmp_path / "db.sqlite", tmp_path / "run"
    args = ("dataset=synthetic", "dataset.dialogues=4", "dataset.sessions=6", "sim.workers=1", "longterm=chat")
    run = [*args, "sim.heartbeat_seconds=0.05", "store=sqlite", f"store.path={db}", f"hydra.run.dir={run_dir}"]
    env = {**os.environ, "CI": "1", "LITELLM_LOCAL_MODEL_COST_MAP": "True", "HF_HUB_OFFLINE": "1"}
    with subprocess.Popen(
        [sys.executable, "-m", "memlab", "run", *run], stderr=subprocess.PIPE, text=True, cwd=tmp_path, env=env
    ) as child:
        assert child.stderr is not None
        said = None
        for line in child.stderr:
            said = said or SCOPE_LINE.fullmatch(line)
            if said and (done := SESSIONS_DONE.search(line)) and 0 < int(done[1]) < 24:
                child.send_signal(signal.SIGKILL)
                break
    assert said is not None and child.returncode == -signal.SIGKILL
    scope = said[1]
    assert said[0].endswith(
        f"scope {scope} (a run that does not finish leaves its rows there: docs/memory.md, Runs on a shared store)\n"
    )
    assert not (run_dir / "manifest.json").exists()
    store = SqlStore(path=str(db))
    try:
        assert scoped(store, scope).sessions() and scoped(store, scope).memory_namespaces()
        assert {session.split("/")[0] for session in store.sessions()} == {scope}  # the rows it left are there
        scoped(store, scope).clear()  # as docs/memory.md says to remove them
        assert store.sessions() == [] and store.memory_namespaces() == []
    finally:
        store.close()
