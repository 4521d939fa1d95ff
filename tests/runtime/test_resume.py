"""Sessions from config: a replay stopped after session k, checkpointed in a SQL store and resumed in a new
process, gives the bytes of the uninterrupted run's metrics.json; a fork's history is its own."""

from __future__ import annotations

import importlib.util
import json
import os
import shlex
import socket
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from in_process import memlab_main

from memlab.memory import Agent, TaskSegmentedCompressor
from memlab.messages import FunctionCall
from memlab.stores import SessionState

STORES = Path(__file__).resolve().parents[1] / "stores" / "conftest.py"
RUN = (
    "dataset=synthetic", "dataset.dialogues=2", "dataset.sessions=3", "dataset.turns_per_session=6",
    "memory=trim", "memory.every_turns=5", "longterm=chat", "longterm.memory_tools=true", "sim.progress=false",
    "sim.workers=1",  # a stopped and resumed replay runs in one process: compare it with one
    "report.plots=false",  # the figures (most of a run's CPU here) are in no file compared
)  # fmt: skip


def _stores():  # type: ignore[no-untyped-def]
    """tests/stores/conftest.py (isolated databases per test), loaded under a name of its own."""
    spec = importlib.util.spec_from_file_location("memlab_test_store_backends", STORES)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def memlab(*overrides: str) -> str:
    """`memlab run` in a new process; its stdout."""
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True", "HF_HUB_OFFLINE": "1"}
    done = subprocess.run(
        [sys.executable, "-m", "memlab", "run", *overrides], capture_output=True, text=True, env=env, timeout=900
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


@pytest.fixture(scope="session")
def uninterrupted(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], Path]:
    """The uninterrupted run's folder per backend, replayed once per test session (it does not depend on k).

    In this process (tests/in_process.py): it is the reference the resumed processes must match, and a run's
    metrics do not depend on the process it runs in; the resume stays a process of its own.
    """
    done: dict[str, Path] = {}

    def run(backend: str) -> Path:
        if backend not in done:
            out = tmp_path_factory.mktemp(f"whole-{backend}")
            with _stores().isolated(backend, out) as one:  # its own database, dropped when the run is done
                assert memlab_main("run", *RUN, *one.overrides, "name=whole", f"output_dir={out / 'whole'}") == 0
            done[backend] = out / "whole"
        return done[backend]

    return run


@pytest.mark.xdist_group("resume_uninterrupted")  # one worker replays each backend's uninterrupted run, once
@pytest.mark.parametrize(("backend", "stop_after"), [("sqlite", 3), ("sqlite", 4), ("postgres", 4), ("mariadb", 2)])
def test_a_resumed_replay_gives_the_uninterrupted_metrics(
    backend: str,
    stop_after: int,
    tmp_path: Path,
    uninterrupted: Callable[[str], Path],
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The stop runs in this process (tests/in_process.py); the resume is `memlab run` in a new process, which
    has nothing of the stopped run but its store: the command line and the checkpoint's round trip."""
    whole = uninterrupted(backend)
    # histories, long-term memories and the checkpoint all live in the run's store: one database per replay
    with _stores().isolated(backend, tmp_path / "b") as other:
        parts = (*RUN, *other.overrides, "name=parts")
        capsys.readouterr()
        status = memlab_main("run", *parts, f"sim.stop_after_session={stop_after}", f"output_dir={tmp_path / 'first'}")
        stopped = capsys.readouterr().out
        assert status == 0 and f"stopped after session {stop_after}" in stopped and not (tmp_path / "first").exists()
        memlab(*parts, "sim.resume=true", f"output_dir={tmp_path / 'resumed'}")
    assert (whole / "metrics.json").read_bytes() == (tmp_path / "resumed" / "metrics.json").read_bytes()
    assert (whole / "calls.csv").read_bytes() == (tmp_path / "resumed" / "calls.csv").read_bytes()


def test_a_stopped_run_leaves_no_folder_where_hydra_would_have_put_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Without output_dir the run's folder is Hydra's, made before the run: a stop publishes nothing, so none stays."""
    monkeypatch.chdir(tmp_path)
    store = ("store=sqlite", f"store.path={tmp_path / 'db.sqlite'}")
    assert memlab_main("run", *RUN, *store, "sim.stop_after_session=1") == 0
    assert "stopped after session 1" in capsys.readouterr().out
    assert sorted(p.name for p in tmp_path.iterdir()) == ["db.sqlite"]


def test_a_stop_on_a_relative_sqlite_path_says_which_file_to_resume_from(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A relative store.path lands in each run's own new folder: `sim.resume=true` alone found no checkpoint."""
    monkeypatch.chdir(tmp_path)
    tiny = ("debug=default", "longterm=chat", "store=sqlite")
    assert memlab_main("run", *tiny, "sim.stop_after_session=1") == 0
    said = capsys.readouterr().out.strip()
    (file,) = (tmp_path / "reports" / "runs" / "debug").glob("*/memlab.sqlite")
    override = shlex.quote('store.path="' + str(file) + '"')  # Hydra's quotes (the folder's name has '='), the shell's
    assert said.endswith(f"checkpoint saved (in {file}; resume: sim.resume=true {override})"), said
    resume = shlex.split(said.rsplit("resume: ", 1)[1].removesuffix(")"))  # as a shell reads the pasted words
    assert memlab_main("run", *tiny, *resume) == 0, capsys.readouterr().err


def test_resume_without_a_checkpoint_names_the_key(
    tmp_path: Path, memlab_run_err: Callable[..., tuple[int, str]]
) -> None:
    """In this process: the run stops at start, with the status and message the command line gives."""
    status, err = memlab_run_err(
        *RUN,
        "store=sqlite",
        f"store.path={tmp_path / 'db.sqlite'}",
        "sim.resume=true",
        f"output_dir={tmp_path / 'out'}",
    )
    assert status == 2 and "memlab-checkpoint:default" in err


@pytest.mark.parametrize("backend", ["sqlite", "postgres", "mariadb"])
def test_a_fork_is_an_independent_history_in_the_store(backend: str, tmp_path: Path) -> None:
    with _stores().isolated(backend, tmp_path) as db:
        agent = Agent.on_store(db.open(), compactor=TaskSegmentedCompressor(keep_tasks=1))
        main = agent.new_session("main")
        main.memory.add_user_input("refactor the parser")
        main.memory.add_output_items([FunctionCall("c1", "run_tests")])
        main.memory.add_tool_output("c1", "3 failed")
        fork = agent.fork(main, "try-peg")
        fork.memory.add_user_input("try a PEG grammar instead")
        main.memory.add_user_input("fix the three failures first")
        # another process opens the same database: each session resumes with its own items only
        other = Agent.on_store(db.open())
        resumed_main, resumed_fork = other.resume("main"), other.resume("try-peg")
        last = [getattr(s.memory.get_items()[-1], "content", None) for s in (resumed_main, resumed_fork)]
        assert last == ["fix the three failures first", "try a PEG grammar instead"]
        assert resumed_main.item_count() == resumed_fork.item_count() == 4
        compacted = fork.compact()  # the coding agent's compact: finished sub-tasks become summary lines
        assert len(compacted.items) == 1 and compacted.summary is not None
        assert other.resume("main").item_count() == 4  # compacting the fork leaves the original alone


def test_fork_and_compact_at_session_ends_from_config(make_config, tmp_path: Path) -> None:
    from memlab.experiment import run_experiment
    from memlab.stores import SqlStore
    from memlab.trace import MEMORY_COMPRESS

    db = tmp_path / "sessions.sqlite"
    cfg = make_config(
        "dataset=synthetic", "dataset.dialogues=1", "dataset.sessions=3", "dataset.turns_per_session=6",
        "agent_memory=hybrid", "agent_memory.compressor.max_items=12", "store=sqlite", f"store.path={db}",
        "+hooks@hooks.sessions=sessions",
        "+hooks.sessions.compactor={_target_: memlab.memory.WindowedMemoryCompressor, max_items: 4}",
    )  # fmt: skip
    run = run_experiment(cfg, tmp_path / "run")
    store = SqlStore(path=str(db))
    branches = sorted(s for s in store.sessions() if "@" in s)
    assert len(branches) == run.metrics["session.forks"] == 3
    assert run.metrics["session.fork_entries"] == sum(store.count(b) for b in branches)
    # each branch froze the history at its session end; compaction then cut the live one to 4 items
    counts = [store.count(b) for b in branches]
    assert all(c > 4 for c in counts) and store.count(branches[0].split("@")[0]) <= 4 + 2
    compactions = [
        e
        for r in run.records
        for e in r.events
        if e.kind == MEMORY_COMPRESS and e.data["compressor"] == "WindowedMemoryCompressor"
    ]
    assert len(compactions) == 3 and all(e.data["after_items"] <= e.data["before_items"] for e in compactions)


def test_a_checkpoint_saved_before_runs_had_scopes_is_refused_with_a_way_on(tmp_path: Path) -> None:
    """One pickled by the memlab before scopes has no stored state to restore: resuming it could double a session."""
    from memlab.errors import MemlabError
    from memlab.sim.checkpoint import Checkpoint, load_checkpoint, save_checkpoint
    from memlab.sim.replay import Cursor
    from memlab.stores import SqlStore

    old = object.__new__(Checkpoint)
    object.__setattr__(old, "__dict__", {"records": (), "cursor": Cursor(session=1), "states": ()})
    store = SqlStore(path=str(tmp_path / "old.sqlite"))
    save_checkpoint(store, "old", old)
    with pytest.raises(MemlabError, match=r"'memlab-checkpoint:old' was saved by an earlier memlab"):
        load_checkpoint(store, "old")


def _stored(path: Path) -> dict[str, object]:
    """Every session a SQLite store holds and its long-term rows: what a refused resume must leave as it was."""
    import sqlite3

    with sqlite3.connect(path) as db:
        tables = [t for (t,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")]
        return {t: sorted(map(repr, db.execute(f"SELECT * FROM {t}"))) for t in tables}


@pytest.mark.parametrize(
    ("stop", "resume", "said"),
    [
        (("context=sliding_window", "context.max_tokens=1000"), ("context=sliding_window", "context.max_tokens=4000"),
         "context.max_tokens: 1000 at the stop, 4000 now"),
        ((), ("sim.max_dialogues=1",), "sim.max_dialogues: None at the stop, 1 now"),
        ((), ("longterm.probe_k=5",), "longterm.probe_k: 20 at the stop, 5 now"),
        ((), ("+hooks@hooks.sessions=sessions",), "hooks.sessions._target_: absent at the stop"),
        ((), ("dataset.turns_per_session=4",), "dataset.turns_per_session: 6 at the stop, 4 now"),
    ],
)  # fmt: skip
def test_a_resume_of_another_config_is_refused_in_one_line_and_leaves_the_store(
    stop: tuple[str, ...],
    resume: tuple[str, ...],
    said: str,
    tmp_path: Path,
    memlab_run_err: Callable[..., tuple[int, str]],
) -> None:
    """It published a mix of two runs (context.max_tokens 1000 then 4000: 210 calls, 157 and 226 straight), or a
    46-line traceback for an added hook; the stop line's display settings and folders may differ."""
    db = tmp_path / "db.sqlite"
    store = ("store=sqlite", f"store.path={db}")
    assert memlab_run_err(*RUN, *store, *stop, "sim.stop_after_session=2", "sim.heartbeat_seconds=5")[0] == 0
    before = _stored(db)
    status, err = memlab_run_err(*RUN, *store, *resume, "sim.resume=true", "report.plots=true", "verbose=true")
    assert status == 2 and err.count("\n") == 1 and err.startswith("memlab: error: sim.resume=true: checkpoint"), err
    assert said in err and "another configuration" in err, err
    assert _stored(db) == before


def test_a_resume_may_change_what_is_read_after_the_replay(
    tmp_path: Path, memlab_run_err: Callable[..., tuple[int, str]]
) -> None:
    """Settings read from the finished records (tags, context_window, strict, objective, eval) do not mix two runs:
    a resume that changes them was refused (turning on eval.answers, say, after a long stop)."""
    db = tmp_path / "db.sqlite"
    store = ("store=sqlite", f"store.path={db}")
    assert memlab_run_err(*RUN, *store, "sim.stop_after_session=2")[0] == 0
    after = ("tags=[resumed]", "context_window=100000", "strict=true", "objective.metric=tokens.prompt.mean")
    status, err = memlab_run_err(*RUN, *store, *after, "sim.resume=true", f"output_dir={tmp_path / 'r'}")
    assert status == 0, err
    assert json.loads((tmp_path / "r" / "manifest.json").read_text())["tags"] == ["resumed"]


def test_a_resume_told_to_stop_where_the_checkpoint_already_is_is_refused(
    tmp_path: Path, memlab_run_err: Callable[..., tuple[int, str]]
) -> None:
    """The defect: sim.stop_after_session=2 on a checkpoint three sessions in ran to the end without a word."""
    store = ("store=sqlite", f"store.path={tmp_path / 'db.sqlite'}")
    assert memlab_run_err(*RUN, *store, "sim.stop_after_session=3")[0] == 0
    status, err = memlab_run_err(
        *RUN, *store, "sim.resume=true", "sim.stop_after_session=2", f"output_dir={tmp_path}/r"
    )
    assert status == 2 and err == (
        "memlab: error: sim.stop_after_session=2: the checkpoint is already 3 sessions in; stop later "
        "(sim.stop_after_session > 3) or leave it out to run to the end\n"
    ), err
    assert memlab_run_err(*RUN, *store, "sim.resume=true", "sim.stop_after_session=4")[0] == 0  # later: it stops


def test_a_resume_on_other_data_is_refused(tmp_path: Path, memlab_run_err: Callable[..., tuple[int, str]]) -> None:
    """The same config over a data file changed since the stop: the dialogues' hash tells."""
    data = tmp_path / "data.jsonl"
    lines = (Path(__file__).resolve().parents[2] / "datasets" / "sample.jsonl").read_text().splitlines(keepends=True)
    data.write_text("".join(lines))
    run = ("dataset=jsonl", f"dataset.path={data}", "store=sqlite", f"store.path={tmp_path / 'db.sqlite'}")
    assert memlab_run_err(*run, "sim.stop_after_session=1")[0] == 0
    data.write_text("".join(lines[:-1]))
    status, err = memlab_run_err(*run, "sim.resume=true")
    assert status == 2 and err.count("\n") == 1 and "was saved from other data" in err, err


def test_a_checkpoint_without_a_fingerprint_is_refused_with_a_way_on(tmp_path: Path) -> None:
    """One saved by the memlab before fingerprints: nothing tells whether it belongs to the resuming run."""
    from memlab.errors import MemlabError
    from memlab.sim.checkpoint import Checkpoint, load_checkpoint, save_checkpoint
    from memlab.sim.replay import Cursor
    from memlab.stores import ScopeState, SqlStore

    old = object.__new__(Checkpoint)
    fields = {"records": (), "cursor": Cursor(session=1), "states": (), "scope": "s", "stored": ScopeState({}, ())}
    object.__setattr__(old, "__dict__", fields)
    store = SqlStore(path=str(tmp_path / "old.sqlite"))
    save_checkpoint(store, "old", old)
    with pytest.raises(MemlabError, match=r"earlier memlab, without the fingerprint .* stop again"):
        load_checkpoint(store, "old")


SWEEP = ("-m", "context=trim,sliding_window")


def test_a_stopped_sweep_resumes_each_job_from_its_own_checkpoint(
    tmp_path: Path, memlab_run_err: Callable[..., tuple[int, str]], capfd: pytest.CaptureFixture[str]
) -> None:
    """Every job has the sweep's name: each stop overwrote the last job's checkpoint, and the resumed job 0 took
    job 1's (wrong metrics, exit 0); the stop said "results in" folders that do not exist, then exited 1. A
    stopped sweep is no baseline: `compare --update` wrote one with none of its configurations."""
    store = ("store=sqlite", f"store.path={tmp_path / 'db.sqlite'}")
    assert memlab_run_err(*SWEEP, *RUN, f"hydra.sweep.dir={tmp_path / 'whole'}")[0] == 0
    status, err = memlab_run_err(*SWEEP, *RUN, *store, "sim.stop_after_session=3", f"hydra.sweep.dir={tmp_path / 's'}")
    assert status == 0 and "results in" not in err, err
    for job, context in enumerate(("trim", "sliding_window")):
        assert f"memlab: job {job} stopped after session 3; checkpoint 'memlab-checkpoint:default[" in err, err
        assert f"context={context}" in err
    assert "job(s) 0, 1 stopped at sim.stop_after_session" in err, err
    # a checkpoint has no metrics: no baseline of the stopped sweep (it was written with no configuration in it)
    stopped, baseline = tmp_path / "s", tmp_path / "baseline.json"
    capfd.readouterr()
    assert memlab_main("compare", str(baseline), str(stopped), "--update") == 2 and not baseline.exists()
    said = f"memlab: error: {stopped}: job(s) 0, 1 stopped at sim.stop_after_session (a checkpoint, no metrics); "
    assert capfd.readouterr().err.startswith(said)
    memlab_main("compare", str(tmp_path / "whole"), str(stopped))
    said = f"memlab: WARNING: {stopped}: job(s) 0, 1 stopped at sim.stop_after_session: their configurations are not"
    assert said in capfd.readouterr().err
    status, err = memlab_run_err(*SWEEP, *RUN, *store, "sim.resume=true", f"hydra.sweep.dir={tmp_path / 'r'}")
    assert status == 0, err
    for job in ("0_context=trim", "1_context=sliding_window"):
        for name in ("metrics.json", "calls.csv"):
            assert (tmp_path / "whole" / job / name).read_bytes() == (tmp_path / "r" / job / name).read_bytes()


def test_a_resume_with_llm_faulty_goes_on_with_its_random_draws(
    tmp_path: Path, memlab_run_err: Callable[..., tuple[int, str]]
) -> None:
    """Its random stream restarted at the resume: llm.calls 72 uninterrupted, 79 resumed."""
    run = (*RUN, "context=summarize", "context.threshold=6", "llm=faulty", "llm.rate=0.5", "store=sqlite")
    store = f"store.path={tmp_path / 'db.sqlite'}"
    assert memlab_run_err(*run, f"store.path={tmp_path / 'w.sqlite'}", f"output_dir={tmp_path / 'whole'}")[0] == 0
    assert memlab_run_err(*run, store, "sim.stop_after_session=3")[0] == 0
    memlab(*run, store, "sim.resume=true", f"output_dir={tmp_path / 'resumed'}")
    for name in ("metrics.json", "calls.csv"):
        assert (tmp_path / "whole" / name).read_bytes() == (tmp_path / "resumed" / name).read_bytes()


def test_a_second_resume_of_a_checkpoint_while_one_runs_is_refused(
    tmp_path: Path, uninterrupted: Callable[[str], Path], memlab_run_err: Callable[..., tuple[int, str]]
) -> None:
    """Two resumes at once both exited 0, each restoring the scope under the other (wrong metrics). While another
    live process holds the checkpoint (here one that takes the lock a resume takes, then waits for this test) a
    resume is refused; once it lets go the resume runs; one that was killed holds nothing: the next resume takes its
    lock over.

    The holder waits for the test rather than being a first `memlab run`: a first resume of this tiny run could end
    before the second had started (CI at load, stop 47), and the refusal then never had to happen."""
    from memlab.stores import SqlStore

    whole = uninterrupted("sqlite")
    db = tmp_path / "db.sqlite"
    parts = (*RUN, "store=sqlite", f"store.path={db}", "name=parts")
    assert memlab_run_err(*parts, "sim.stop_after_session=2")[0] == 0
    hold = (
        "import sys\nfrom memlab.sim.checkpoint import checkpoint_lock\nfrom memlab.stores import SqlStore\n"
        f"with checkpoint_lock(SqlStore(path={str(db)!r}), 'parts'):\n    print('held', flush=True)\n"
        "    sys.stdin.readline()\n"
    )
    holder = subprocess.Popen([sys.executable, "-c", hold], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert holder.stdout is not None and holder.stdin is not None
    assert holder.stdout.readline() == "held\n"
    status, err = memlab_run_err(*parts, "sim.resume=true", f"output_dir={tmp_path / 'second'}")
    holder.stdin.write("\n")
    holder.stdin.close()
    assert holder.wait(timeout=60) == 0
    assert status == 2 and err.count("\n") == 1 and "is being resumed by another process" in err, err
    assert f"pid {holder.pid} " in err and not (tmp_path / "second").exists()
    store, lock = SqlStore(path=str(db)), "memlab-checkpoint-lock:parts"
    assert not store.load(lock).entries
    assert memlab_run_err(*parts, "sim.resume=true", f"output_dir={tmp_path / 'first'}")[0] == 0
    assert not store.load(lock).entries, "a finished resume lets go of its checkpoint"
    assert (whole / "metrics.json").read_bytes() == (tmp_path / "first" / "metrics.json").read_bytes()
    gone = subprocess.Popen([sys.executable, "-c", ""])
    gone.wait()
    dead = {"host": socket.gethostname(), "pid": gone.pid, "started": None}
    store.update(lock, lambda _: SessionState(({"holder": dead},), None))
    assert memlab_run_err(*parts, "sim.resume=true", f"output_dir={tmp_path / 'third'}")[0] == 0
