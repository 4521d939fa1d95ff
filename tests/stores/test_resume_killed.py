"""A resumed replay SIGKILLed at a random point, then resumed again, ends as the uninterrupted run: the same
metrics.json and calls.csv, and the same stored histories, long-term rows and access counts, on SQLite,
PostgreSQL, MariaDB and (sessions only) Redis. A resume restores the run's scope to what its checkpoint saw
(`memlab.sim.checkpoint`), so the killed attempt's writes are undone rather than replayed twice.

Each trial draws where the first run stops (after session 1 to 5 of 6) and the statement the killed resume
dies before (any statement the stores send, inside a transaction or between two). Two trials per backend
run by default; `MEMLAB_KILL_TRIALS=20` runs twenty.
"""

from __future__ import annotations

import contextlib
import gc
import itertools
import json
import multiprocessing
import os
import random
import signal
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from omegaconf import DictConfig
from sqlalchemy import event

from memlab.experiment import load_dialogues, replay_checkpointed, run_experiment
from memlab.stores import ScopeState, scoped

TRIALS = int(os.environ.get("MEMLAB_KILL_TRIALS", "2"))
FORK = multiprocessing.get_context("fork")
DATA = ("dataset=synthetic", "dataset.dialogues=2", "dataset.sessions=3", "dataset.turns_per_session=4")
SESSIONS = 6  # 2 dialogues x 3 sessions
# report.plots=false: the report's figures, most of each run's CPU here, are in no file compared.
REPLAY = (
    "memory=trim", "memory.every_turns=5", "sim.progress=false", "sim.workers=1", "name=killed", "report.plots=false",
)  # fmt: skip
# Redis keeps no long-term rows: there the run is an agent memory's sessions.
LONGTERM = ("longterm=chat", "longterm.memory_tools=true")
AGENT_MEMORY = ("agent_memory=hybrid", "agent_memory.compressor.max_items=6")
PUBLISHED = ("metrics.json", "calls.csv")
BACKENDS = ("sqlite", "postgres", "mariadb", "redis")


@dataclass(frozen=True)
class Outcome:
    """What a finished run left: its published bytes and what its scope holds in the store."""

    files: dict[str, bytes]
    stored: ScopeState


def _overrides(backend: str) -> tuple[str, ...]:
    return (*DATA, *REPLAY, *(AGENT_MEMORY if backend == "redis" else LONGTERM))


def _outcome(run_dir: Path, store: Any) -> Outcome:
    scope = json.loads((run_dir / "manifest.json").read_text())["store"]["scope"]
    return Outcome({name: (run_dir / name).read_bytes() for name in PUBLISHED}, scoped(store, scope).snapshot())


@contextlib.contextmanager
def each_statement(backend: str, call: Callable[[], None]) -> Iterator[None]:
    """`call()` before every statement any store sends: SQL through SQLAlchemy, Redis commands on the wire."""
    if backend != "redis":

        def hook(*_: Any) -> None:
            call()

        event.listen(sa.engine.Engine, "before_cursor_execute", hook)
        try:
            yield
        finally:
            event.remove(sa.engine.Engine, "before_cursor_execute", hook)
        return
    from redis.connection import AbstractConnection

    send = AbstractConnection.send_packed_command

    def counted(self: Any, *args: Any, **kwargs: Any) -> Any:
        call()
        return send(self, *args, **kwargs)

    AbstractConnection.send_packed_command = counted  # type: ignore[method-assign]
    try:
        yield
    finally:
        AbstractConnection.send_packed_command = send  # type: ignore[method-assign]


def _killed_at(cfg: DictConfig, run_dir: Path, backend: str, at: int) -> None:
    """In a forked child: the run, SIGKILLed just before the `at`-th statement it sends."""
    sent = itertools.count(1)

    def count() -> None:
        if next(sent) == at:
            os.kill(os.getpid(), signal.SIGKILL)

    with each_statement(backend, count):
        run_experiment(cfg, run_dir)


def _resume_statements(make_config: Any, isolate: Any, tmp_path: Path, backend: str, stop: int) -> int:
    """How many statements a resume of a run stopped after session `stop` sends, from its restore to its last
    probe (publishing sends none): the same two steps on a database of their own."""
    with isolate(backend, tmp_path / "count-db") as db:
        base = (*_overrides(backend), *db.overrides)
        run_experiment(make_config(*base, f"sim.stop_after_session={stop}"), tmp_path / "count")
        resume = make_config(*base, "sim.resume=true")
        sent = itertools.count(1)
        with each_statement(backend, lambda: next(sent)):
            replay_checkpointed(resume, load_dialogues(resume))
    return next(sent) - 1


_UNINTERRUPTED: dict[str, Outcome] = {}
# One worker runs the module, so each backend's uninterrupted run is replayed once, not once per worker.
pytestmark = pytest.mark.xdist_group("resume_killed")


def uninterrupted(backend: str, make_config: Any, isolate: Any, tmp_path: Path) -> Outcome:
    """The run in one go on a database of its own, once per backend and test session."""
    if backend not in _UNINTERRUPTED:
        with isolate(backend, tmp_path / "whole-db") as db:
            run = run_experiment(make_config(*_overrides(backend), *db.overrides), tmp_path / "whole")
            _UNINTERRUPTED[backend] = _outcome(run.run_dir, db.open())
    return _UNINTERRUPTED[backend]


@pytest.mark.parametrize("trial", range(TRIALS))
@pytest.mark.parametrize("backend", BACKENDS)
def test_a_resume_killed_anywhere_then_resumed_ends_as_the_uninterrupted_run(
    make_config: Any, isolate: Any, tmp_path: Path, backend: str, trial: int
) -> None:
    whole = uninterrupted(backend, make_config, isolate, tmp_path)
    draw = random.Random(f"{backend}:{trial}")
    stop = draw.randint(1, SESSIONS - 1)
    sent = _resume_statements(make_config, isolate, tmp_path, backend, stop)
    at = draw.randint(1, sent)
    with isolate(backend, tmp_path / "db") as db:
        base = (*_overrides(backend), *db.overrides)
        assert run_experiment(make_config(*base, f"sim.stop_after_session={stop}"), tmp_path / "stopped").stopped
        resume = make_config(*base, "sim.resume=true")
        gc.collect()  # no connection of this process is left for the child to close on exit
        child = FORK.Process(target=_killed_at, args=(resume, tmp_path / "killed", backend, at))
        child.start()
        child.join(300)
        assert child.exitcode == -signal.SIGKILL, f"the resume was to die before statement {at} of {sent}"
        killed = tmp_path / "killed"  # nothing published: at most the folder it held, empty (a kill leaves it)
        assert not killed.exists() or not any(killed.iterdir())
        assert not (tmp_path / "stopped").exists()  # a stop publishes nothing and leaves no folder
        run = run_experiment(resume, tmp_path / "resumed")
        after = _outcome(run.run_dir, db.open())
    earlier = json.loads((run.run_dir / "manifest.json").read_text())["store"]["earlier_state"]
    assert earlier == "sim.resume=true: its scope as checkpoint 'memlab-checkpoint:killed' saved it"
    assert after.files == whole.files, f"stopped after session {stop}, killed before statement {at} of {sent}"
    assert after.stored == whole.stored, f"stopped after session {stop}, killed before statement {at} of {sent}"
