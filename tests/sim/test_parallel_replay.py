"""`sim.workers=N` replays dialogues in N processes and publishes the same bytes as one process."""

from __future__ import annotations

import dataclasses
import gc
import json
import multiprocessing
import os
import shutil
import signal
import sqlite3
import struct
import subprocess
import sys
import threading
import time
import weakref
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from contextlib import closing
from operator import attrgetter
from pathlib import Path
from typing import Any

import pytest
from omegaconf import DictConfig
from replays import NO_FIGURES

import memlab.experiment
import memlab.sim.parallel
from memlab.dialogues import Dialogue, load_tau_bench
from memlab.dialogues.synthetic import generate_synthetic
from memlab.errors import MemlabError
from memlab.experiment import build_components, replay, replay_workers, run_experiment, runtime_factory
from memlab.llm.extractive import SUMMARY_MEMO
from memlab.runtime import Component, Runtime
from memlab.sim.parallel import chains, simulate_parallel, stop_now
from memlab.sim.replay import ReplayOptions, simulate, user_ends

# What a run publishes that must not depend on how the replay was split (latency.json may).
DETERMINISTIC = ("metrics.json", "calls.csv", "questions.csv")
HOOK = ["+hooks@hooks.summarization=summarization", "hooks.summarization.trigger_tokens=2000"]


def _published(cfg: DictConfig, run_dir: Path) -> dict[str, bytes]:
    out = run_experiment(cfg, run_dir).run_dir
    return {name: (out / name).read_bytes() for name in DETERMINISTIC if (out / name).exists()}


@pytest.mark.parametrize(
    "overrides",
    [
        ["context=summarize", "memory=summarize", *HOOK],
        ["context=composite", "longterm=default"],
        ["agent_memory=hybrid", "store=sqlite", "store.path=STORE"],
    ],
    ids=["summarizers", "composite+longterm", "hybrid+sqlite"],
)
def test_two_workers_publish_what_one_does(make_config: Callable[..., DictConfig], tmp_path: Path, overrides) -> None:
    runs = {}
    for workers in (1, 2):
        run_dir = tmp_path / f"w{workers}" / "run"
        given = [o.replace("STORE", str(tmp_path / f"store{workers}.db")) for o in overrides]
        cfg = make_config(*given, f"sim.workers={workers}", f"output_dir={run_dir}", "sim.progress=false", NO_FIGURES)
        runs[workers] = _published(cfg, run_dir)
    assert runs[1].keys() >= {"metrics.json", "calls.csv"}
    assert runs[2] == runs[1]


@pytest.mark.slow
@pytest.mark.parametrize("strategy", [["context=summarize"], ["longterm=locomo"]], ids=["summarize", "longterm"])
def test_locomo_in_two_workers(make_config, locomo_path: Path, tmp_path: Path, strategy: list[str]) -> None:
    """Long-term memory ids count per user, so a dialogue's tool results do not depend on who replayed before it.

    Two conversations, each cut to its first six sessions (and the probes whose evidence lies in them): what is
    compared is how the replay was split, which does not depend on a conversation's length.
    """
    base = [
        "dataset=locomo",
        f"dataset.path={locomo_path}",
        "dataset.max_dialogues=2",
        "sim.max_sessions=6",
        *strategy,
        NO_FIGURES,
    ]
    one = _published(make_config(*base, "sim.workers=1"), tmp_path / "one")
    two = _published(make_config(*base, "sim.workers=2"), tmp_path / "two")
    assert one.keys() >= {"metrics.json", "calls.csv", "questions.csv"}  # the slice keeps probes ...
    worked = "summary.count" if strategy == ["context=summarize"] else "longterm.memories"
    assert json.loads(one["metrics.json"])[worked] > 0  # ... and summaries or memories
    assert two == one


@pytest.mark.parametrize("store", [[], ["store=sqlite", "store.path=STORE"]], ids=["memory", "sqlite"])
def test_a_users_later_dialogue_finds_what_the_earlier_left_in_two_workers(
    make_config, tau_bench_path: Path, tmp_path: Path, store: list[str]
) -> None:
    """tau-bench's trajectories 5 and 6 are one user's: with long-term memory the second reads what the first saved,
    so two workers must replay them in one process, in order, to publish what one process does (they did not: the
    later trajectory ran with an empty memory in the other worker, 86 injected tokens per call against 149)."""
    base = ["dataset=tau_bench", f"dataset.path={tau_bench_path}", "dataset.max_dialogues=6", "longterm=chat"]
    users = Counter(d.user_id for d in load_tau_bench(tau_bench_path)[:6])
    assert sorted(users.values()) == [1, 1, 1, 1, 2]  # one user twice, among others
    runs = {}
    for workers in (1, 2):
        given = [o.replace("STORE", str(tmp_path / f"store{workers}.db")) for o in store]
        cfg = make_config(*base, *given, f"sim.workers={workers}", "sim.progress=false", NO_FIGURES)
        runs[workers] = _published(cfg, tmp_path / f"w{workers}")
    assert json.loads(runs[1]["metrics.json"])["longterm.injected_tokens.per_call"] > 0
    assert runs[2] == runs[1]


def test_a_parallel_replay_leaves_a_sqlite_store_whole(make_config, tmp_path: Path) -> None:
    """Each worker closes what it built when it exits: the run's rows are in the database file, none left in a
    -wal file beside it (there were, and the database file alone held no rows: a copy of it lost the run)."""
    db = tmp_path / "store.db"
    store = ["agent_memory=hybrid", "store=sqlite", f"store.path={db}", "sim.progress=false", NO_FIGURES]
    run_experiment(make_config(*store, "sim.workers=2", "dataset.dialogues=4", "dataset.sessions=1"), tmp_path / "run")
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("store.db")) == ["store.db"]
    copy = shutil.copyfile(db, tmp_path / "copy.db")  # the database file alone, as a user would archive it
    with closing(sqlite3.connect(copy)) as conn:
        assert conn.execute("SELECT count(*) FROM memlab_sessions").fetchone()[0] == 4


def test_an_interrupted_parallel_replay_leaves_a_sqlite_store_whole(
    make_config, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ctrl-C after the first dialogue: the workers are stopped, then the store settled (its -wal and -shm were
    left beside the database: the workers were terminated with their connections open, and nothing settled)."""
    import memlab.experiment

    def interrupted(items, *args, **kwargs):  # the replay's progress loop, interrupted at the second dialogue
        for i, item in enumerate(items):
            if i == 1:
                raise KeyboardInterrupt
            yield item

    monkeypatch.setattr(memlab.experiment, "_progress", interrupted)
    db = tmp_path / "store.db"
    store = ["agent_memory=hybrid", "store=sqlite", f"store.path={db}", "sim.progress=false", NO_FIGURES]
    with pytest.raises(KeyboardInterrupt):
        run_experiment(
            make_config(*store, "sim.workers=2", "dataset.dialogues=4", "dataset.sessions=2"), tmp_path / "r"
        )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["store.db"]  # no -wal, no -shm, no run folder
    with closing(sqlite3.connect(db)) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"


def _marking_factory(spec: tuple[DictConfig, Path]) -> Callable[[Dialogue], Runtime]:
    """`runtime_factory` of the config, leaving a file named after each dialogue a worker starts, holding its pid."""
    cfg, started = spec
    make_runtime = runtime_factory(cfg)

    def make(dialogue: Dialogue) -> Runtime:
        (started / dialogue.id).write_text(str(os.getpid()))
        return make_runtime(dialogue)

    return make


def test_a_chain_of_dialogues_replays_in_one_worker_in_order(make_config, tmp_path: Path) -> None:
    """A group's dialogues go to one worker, one after another; the records come back in input order."""
    cfg = make_config("dataset.dialogues=8", "dataset.sessions=1")
    users = ["ann", "ann", "bob", "bob", "ann", "ann", "bob", "bob"]
    made = generate_synthetic(seed=1, dialogues=8, sessions=1)
    dialogues = [dataclasses.replace(d, user_id=u) for d, u in zip(made, users, strict=True)]
    options = ReplayOptions(call_roles=tuple(cfg.sim.call_roles), probe_context=cfg.sim.probe_context)
    groups = chains(dialogues, attrgetter("user_id"))
    replayed = list(simulate_parallel(dialogues, _marking_factory, (cfg, tmp_path), 2, options, groups=groups))
    assert [records[0].dialogue_id for records in replayed] == [d.id for d in dialogues]
    pids = {u: {(tmp_path / d.id).read_text() for d in dialogues if d.user_id == u} for u in ("ann", "bob")}
    assert [len(p) for p in pids.values()] == [1, 1]  # each user's dialogues in one worker


class _UserEnds(Component):
    """At each user's end, appends the user's dialogues this process replayed to a file named after the user."""

    def __init__(self, folder: Path) -> None:
        self.folder, self.seen = folder, {}

    def on_dialogue_start(self, runtime: Runtime, dialogue: Dialogue) -> None:
        self.seen.setdefault(dialogue.user_id, []).append(dialogue.id)

    def on_user_end(self, runtime: Runtime, user_id: str) -> None:
        with open(self.folder / user_id, "a") as f:
            f.write(" ".join(self.seen[user_id]) + "\n")


def _ends_factory(spec: tuple[DictConfig, Path]) -> Callable[[Dialogue], Runtime]:
    """`runtime_factory` of the config with a `_UserEnds` writing to the folder."""
    cfg, folder = spec
    return runtime_factory(cfg, [*build_components(cfg), _UserEnds(folder)])


@pytest.mark.parametrize("workers", [1, 2])
def test_each_user_ends_once_after_their_last_dialogue(make_config, tmp_path: Path, workers: int) -> None:
    """`on_user_end` follows the user's last dialogue, in the process that replayed all of theirs (peers free it)."""
    cfg = make_config("dataset.dialogues=6", "dataset.sessions=1")
    made = generate_synthetic(seed=1, dialogues=6, sessions=1)
    users = ["ann", "bob", "cat", "ann", "bob", "ann"]
    dialogues = [dataclasses.replace(d, user_id=u) for d, u in zip(made, users, strict=True)]
    options = ReplayOptions(call_roles=tuple(cfg.sim.call_roles), probe_context=cfg.sim.probe_context)
    if workers == 1:
        list(simulate(dialogues, _ends_factory((cfg, tmp_path)), options, ends=user_ends(dialogues)))
    else:
        groups = chains(dialogues, attrgetter("user_id"))
        list(simulate_parallel(dialogues, _ends_factory, (cfg, tmp_path), workers, options, groups=groups))
    ids = [d.id for d in dialogues]
    assert {p.name: p.read_text() for p in tmp_path.iterdir()} == {
        "ann": f"{ids[0]} {ids[3]} {ids[5]}\n",
        "bob": f"{ids[1]} {ids[4]}\n",
        "cat": f"{ids[2]}\n",
    }


@pytest.mark.parametrize(
    ("longterm", "users", "expected"),
    [
        ("chat", "abab", [[[0, 2], [1, 3]]]),  # long-term memory: dialogues grouped by user
        ("none", "abab", [[[0], [1], [2], [3]]]),  # nothing kept between dialogues: each goes alone
        ("chat", "aaaa", []),  # one user's dialogues only: one group, replayed in this process
    ],
)
def test_a_replay_groups_dialogues_by_user_only_when_a_component_keeps_user_state(
    make_config, monkeypatch: pytest.MonkeyPatch, longterm: str, users: str, expected: list[object]
) -> None:
    cfg = make_config(f"longterm={longterm}", "sim.workers=2", "sim.progress=false")
    made = generate_synthetic(seed=1, dialogues=4, sessions=1)
    dialogues = [dataclasses.replace(d, user_id=u) for d, u in zip(made, users, strict=True)]
    seen: list[object] = []
    parallel = memlab.experiment.simulate_parallel

    def spy(*args: Any, **kwargs: Any) -> Any:
        seen.append(kwargs["groups"])
        return parallel(*args, **kwargs)

    monkeypatch.setattr(memlab.experiment, "simulate_parallel", spy)
    replay(cfg, dialogues)
    assert seen == expected


def test_chains_group_positions_by_key_in_input_order() -> None:
    made = generate_synthetic(seed=1, dialogues=5)
    dialogues = [dataclasses.replace(d, user_id=u) for d, u in zip(made, "abcab", strict=True)]
    assert chains(dialogues, attrgetter("user_id")) == [[0, 3], [1, 4], [2]]
    assert chains(dialogues, None) == [[0], [1], [2], [3], [4]]


def test_workers_default_to_the_cores_and_never_exceed_the_dialogues(make_config, monkeypatch) -> None:
    monkeypatch.setattr("os.cpu_count", lambda: 8)
    assert replay_workers(make_config(), 3) == 3
    assert replay_workers(make_config(), 1) == 1
    assert replay_workers(make_config("sim.workers=2"), 5) == 2


def test_a_model_with_run_wide_state_replays_in_one_process(make_config) -> None:
    assert replay_workers(make_config("llm=faulty"), 4) == 1
    with pytest.raises(MemlabError, match=r"sim\.workers=1"):
        replay_workers(make_config("llm=faulty", "sim.workers=2"), 4)
    with pytest.raises(MemlabError, match=r"sim\.workers=0"):
        replay_workers(make_config("sim.workers=0"), 4)


def test_a_stateful_model_inside_a_component_also_replays_in_one_process(
    make_config, tmp_path: Path, monkeypatch
) -> None:
    """A faulty model under context.strategy.llm was missed (only `llm` was looked at): each worker drew from its
    own copy in the order the pool handed out dialogues, and three runs gave three metrics.json."""
    monkeypatch.setattr("os.cpu_count", lambda: 4)  # workers=null: as many as there are cores, were it free to
    faulty = "context.strategy.llm={_target_:memlab.llm.FaultyChatModel,rate:0.5,seed:3}"
    run = ("context=summarize", faulty, "sim.max_sessions=3", "sim.max_dialogues=4", NO_FIGURES)
    runs = [
        run_experiment(make_config(*run, f"sim.workers={w}"), tmp_path / f"{w}{i}")
        for i, w in enumerate(["null", "null", 1])
    ]
    assert runs[0].metrics["summary.fallbacks"] > 0  # the model did fail some summaries
    assert len({(r.run_dir / "metrics.json").read_bytes() for r in runs}) == 1
    assert len({(r.run_dir / "calls.csv").read_bytes() for r in runs}) == 1
    with pytest.raises(MemlabError, match=r"sim\.workers=2: a component's model \(FaultyChatModel\) keeps state"):
        run_experiment(make_config(*run, "sim.workers=2"), tmp_path / "two")


def test_summaries_from_workers_serve_the_next_job_of_a_sweep(make_config, tmp_path: Path) -> None:
    """Workers send their new summaries back, so a later job in this process computes none of them again."""
    SUMMARY_MEMO.clear()
    run_experiment(make_config("context=summarize", "sim.workers=2", "sim.progress=false"), tmp_path / "first")
    assert SUMMARY_MEMO.hits == SUMMARY_MEMO.misses == 0  # all the work happened in the workers
    second = run_experiment(make_config("context=composite", "sim.workers=2", "sim.progress=false"), tmp_path / "next")
    latency = json.loads((second.run_dir / "latency.json").read_text())
    assert second.metrics["summary.count"] > 0
    assert latency["latency.cached_calls"] == second.metrics["summary.count"]


def _held_factory(spec: tuple[DictConfig, Path, str, Any]) -> Callable[[Dialogue], Runtime]:
    """`_marking_factory`, where each dialogue but the one named waits, once marked, for the test to set `release`
    (a multiprocessing Event); the wait is bounded only so that a pool that awaits its workers ends, and fails."""
    cfg, started, free, release = spec
    make_runtime = _marking_factory((cfg, started))

    def make(dialogue: Dialogue) -> Runtime:
        runtime = make_runtime(dialogue)
        if dialogue.id != free:
            release.wait(60)
        return runtime

    return make


def test_an_abandoned_parallel_replay_stops_its_workers_and_drops_the_queue(make_config, tmp_path: Path) -> None:
    """What Ctrl-C does to a parallel replay (the generator's `finally`), without a signal's timing.

    Every dialogue but the first is held in the worker that took it until the test lets it go, which it never does:
    the workers were replaying freely, and a test process held back a second or three between the first records
    and `close()` found all eight dialogues started (a loaded machine)."""
    cfg = make_config("context=summarize", "dataset.dialogues=8", "dataset.sessions=4")
    dialogues = generate_synthetic(seed=1, dialogues=8, sessions=4)
    options = ReplayOptions(call_roles=tuple(cfg.sim.call_roles), probe_context=cfg.sim.probe_context)
    before = set(multiprocessing.active_children())
    spec = (cfg, tmp_path, dialogues[0].id, multiprocessing.Event())
    replaying = simulate_parallel(dialogues, _held_factory, spec, 2, options)
    assert next(replaying)  # the first dialogue's records: the pool's two workers are running
    workers = set(multiprocessing.active_children()) - before
    assert len(workers) == 2
    replaying.close()  # as when KeyboardInterrupt leaves the loop that consumes it
    assert [w.exitcode for w in workers] == [-signal.SIGTERM] * 2  # terminated, not awaited (that exits 0)
    started = sorted(p.name for p in tmp_path.iterdir())
    assert 1 <= len(started) <= 3, started  # the first, and one held by each worker: the queued were never replayed


@pytest.mark.parametrize("sent", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_signal_as_a_worker_starts_never_runs_the_parents_handler_there(
    make_config, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, sent: int
) -> None:
    """The defect: a Ctrl-C or a SIGTERM as a parallel replay started its workers (one of 24 sent at random times
    into a small run here) ran the parent's handler in a worker not yet started, `memlab run`'s raising there: a
    'concurrent.futures: Exception in initializer' traceback per worker under the run's one line. Here each worker
    gets the signal as it starts, before its initializer, under a handler that marks the process it runs in: SIGINT
    (a terminal's Ctrl-C reaches the workers too) is ignored and the replay goes on; SIGTERM ends the worker, as its
    default does."""
    marks = tmp_path / "handled"
    marks.mkdir()

    def handler(signum: int, frame: object) -> None:  # raises, as `memlab run`'s SIGTERM handler and Ctrl-C do
        (marks / str(os.getpid())).touch()
        raise KeyboardInterrupt

    start = memlab.sim.parallel._start

    def signalled_first(*args: Any) -> None:
        os.kill(os.getpid(), sent)
        start(*args)

    monkeypatch.setattr(memlab.sim.parallel, "_start", signalled_first)
    cfg = make_config("dataset.dialogues=2", "dataset.sessions=1", "sim.progress=false")
    dialogues = generate_synthetic(seed=1, dialogues=2, sessions=1)
    options = ReplayOptions(call_roles=tuple(cfg.sim.call_roles), probe_context=cfg.sim.probe_context)
    previous = signal.signal(sent, handler)
    try:
        if sent == signal.SIGINT:
            assert len(list(simulate_parallel(dialogues, runtime_factory, cfg, 2, options))) == 2
        else:
            with pytest.raises(BrokenProcessPool):  # the workers ended: nothing replayed them
                list(simulate_parallel(dialogues, runtime_factory, cfg, 2, options))
    finally:
        signal.signal(sent, previous)
    assert list(marks.iterdir()) == []


def test_stopping_a_pool_whose_result_pipe_holds_part_of_a_message_does_not_hang() -> None:
    """A worker terminated while it sends a result leaves part of a message in the result pipe: the pool's manager
    thread then waits for the rest, and a plain shutdown with it, for ever (an abandoned replay hung a test for an
    hour). The part is written here, as the terminated worker would have left it."""
    pool = ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("fork"))
    assert pool.submit(int, "7").result() == 7  # the manager thread is up, waiting on the result pipe
    os.write(pool._result_queue._writer.fileno(), struct.pack("!i", 1 << 20) + b"part of a result")
    stopping = threading.Thread(target=stop_now, args=(pool,), daemon=True)
    stopping.start()
    stopping.join(60)
    assert not stopping.is_alive()


class _Cycle:
    """Garbage only the collector frees (it references itself); its finalizer leaves a file named after its process."""

    def __init__(self, marks: Path) -> None:
        self.me = self
        weakref.finalize(self, lambda: (marks / str(os.getpid())).touch())


def _collecting_factory(cfg: DictConfig) -> Callable[[Dialogue], Runtime]:
    """`runtime_factory` of the config, built after a full collection in the worker."""
    gc.collect()
    return runtime_factory(cfg)


@pytest.mark.skipif("fork" not in multiprocessing.get_all_start_methods(), reason="workers are forked only on POSIX")
def test_a_forked_worker_never_finalizes_the_parents_garbage(make_config, tmp_path: Path) -> None:
    """The parent's garbage, copied by the fork, is the parent's to collect: a finalizer of it that ran in a worker
    waited there for a thread only the parent has (the llama-index peer's event loop), and the replay hung.

    The parent's collector is paused from the garbage's making to the fork, so the workers inherit it uncollected.
    """
    cfg = make_config("dataset.dialogues=2", "dataset.sessions=1", "sim.progress=false")
    dialogues = generate_synthetic(seed=1, dialogues=2, sessions=1)
    options = ReplayOptions(call_roles=tuple(cfg.sim.call_roles), probe_context=cfg.sim.probe_context)
    marks = tmp_path / "finalized"
    marks.mkdir()
    gc.disable()
    try:
        _Cycle(marks)
        replaying = simulate_parallel(dialogues, _collecting_factory, cfg, 2, options)
        assert len(next(replaying)) > 0  # the workers have started, and collected
    finally:
        gc.enable()
    assert len(list(replaying)) == 1
    gc.collect()
    assert [p.name for p in marks.iterdir()] == [str(os.getpid())]  # finalized here, and only here


class MarksItsWorker(Component):
    """A context component that leaves a file named after the process replaying each session (MEMLAB_TEST_PIDS),
    then waits for the test: it reads the pipe whose read end is the descriptor MEMLAB_TEST_HOLD, which returns
    once the test closes the other end (at once after that)."""

    def __init__(self, **knobs: Any) -> None:  # the context group's sweep knobs, unused
        super().__init__()

    def on_session_start(self, runtime: Any, session: Any) -> None:
        (Path(os.environ["MEMLAB_TEST_PIDS"]) / str(os.getpid())).touch()
        os.read(int(os.environ["MEMLAB_TEST_HOLD"]), 1)


def _running(pid: int) -> bool:
    """Alive and not a zombie (a container's first process may never reap an orphan)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state not in ("Z", "X")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the kernel's parent-death signal is Linux's")
def test_the_workers_of_a_killed_run_die_with_it(tmp_path: Path) -> None:
    """The defect: after kill -9 of `memlab run sim.workers=2` its workers went on replaying, writing into the store
    and holding its connections, until killed one by one.

    Each worker waits in its first session until the test lets it go (`MarksItsWorker`), which it does only once
    the run is dead: the workers replayed freely, and a test held back two seconds after seeing them start found
    them finished (a loaded machine, or a fast one)."""
    pids = tmp_path / "pids"
    pids.mkdir()
    here = Path(__file__).resolve()
    path = os.pathsep.join(map(str, (here.parents[2], here.parents[1], here.parent)))  # the checkout, tests, here
    hold, release = os.pipe()
    env = {**os.environ, "MEMLAB_TEST_PIDS": str(pids), "MEMLAB_TEST_HOLD": str(hold), "PYTHONPATH": path}
    args = [
        sys.executable, "-m", "memlab", "run", "dataset.dialogues=6", "dataset.sessions=40", "sim.workers=2",
        "context._target_=test_parallel_replay.MarksItsWorker", "sim.progress=false", f"output_dir={tmp_path / 'r'}",
    ]  # fmt: skip
    run = subprocess.Popen(
        args, env=env, cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, pass_fds=(hold,)
    )
    os.close(hold)
    workers: list[int] = []
    try:
        deadline = time.monotonic() + 300  # a bound on the run's start, not a timing
        while len({p.name for p in pids.iterdir()} - {str(run.pid)}) < 2 and time.monotonic() < deadline:
            assert run.poll() is None, run.communicate()[1]
            time.sleep(0.05)
        workers = [int(p.name) for p in pids.iterdir() if p.name != str(run.pid)]
        assert len(workers) == 2 and all(map(_running, workers))
        run.kill()
        run.wait()
        deadline = time.monotonic() + 60  # a liveness bound, not a timing: the kernel signals them at once
        while any(map(_running, workers)) and time.monotonic() < deadline:
            time.sleep(0.05)
        left = [w for w in workers if _running(w)]
    finally:  # workers left are killed first: they hold the run's stderr open
        run.kill()
        for pid in filter(_running, workers):  # not leave them to the rest of the suite
            os.kill(pid, signal.SIGKILL)
        os.close(release)
        run.communicate()
    assert left == []
