"""Progress that reaches a log: heartbeat lines on stderr off a terminal and in run.log, a bar on a terminal."""

from __future__ import annotations

import fcntl
import logging
import os
import pty
import re
import select
import struct
import subprocess
import sys
import termios
from pathlib import Path
from typing import Any

from memlab.runtime import Component
from memlab.sim.parallel import simulate_parallel
from memlab.sim.progress import CALLS, PROBES, SESSIONS, Heartbeat, new_tally
from memlab.sim.records import CallRecord, LifecycleRecord, ProbeRecord
from memlab.sim.replay import ReplayOptions
from memlab.trace import PROGRESS_LOGGER

ROOT = Path(__file__).resolve().parents[2]
SMALL = ("dataset.dialogues=2", "dataset.sessions=2", "sim.heartbeat_seconds=0.05")
# memlab: run default: replay: 12 calls (40.1/s), 0 probes, 0 of 2 dialogues, 1 of 4 sessions done, about 1 s of
# replay left, 0 s elapsed
BEAT = re.compile(r"^memlab: (?P<run>.+?): (?P<phase>[a-z ]+): (?P<calls>[\d,]+) calls( \([\d.,]+/s\))?, [\d,]+ probes")
LOGGED = " INFO memlab.progress: "
PLACE = re.compile(r", \d+ of 2 dialogues, (?P<sessions>\d+) of 4 sessions done, ")


def beats(stderr: str) -> list[str]:
    """The heartbeat lines among `stderr`'s."""
    return [line for line in stderr.splitlines() if BEAT.match(line)]


def logged_beats(run_dir: Path) -> list[str]:
    """The heartbeat lines of a run's run.log (``<time> INFO memlab.progress: <line>``), as stderr has them."""
    lines = (run_dir / "run.log").read_text().splitlines()
    return beats("\n".join("memlab: " + line.split(LOGGED)[1] for line in lines if LOGGED in line))


class WaitsForBeats(Component):
    """A context component whose replay waits at each session after the first until the test lets it go: until the
    pipe whose read end is the descriptor MEMLAB_TEST_HOLD has something to read (bounded, should no beat come).
    Nothing reads it, so once written it lets every worker through."""

    def __init__(self, **knobs: Any) -> None:  # the context group's sweep knobs, unused
        super().__init__()
        self.sessions = 0

    def on_session_start(self, runtime: Any, session: Any) -> None:
        self.sessions += 1
        if self.sessions > 1:
            select.select([int(os.environ["MEMLAB_TEST_HOLD"])], [], [], 120)


class _ReleaseAfterBeats(logging.Handler):
    """Writes to the descriptor `gate` (a pipe's write end) once `n` heartbeat lines of the replay have counted calls.

    Not by closing it: the workers, forked from this process, hold the write end too."""

    def __init__(self, gate: int, n: int) -> None:
        super().__init__()
        self.gate, self.left = gate, n

    def emit(self, record: logging.LogRecord) -> None:
        beat = BEAT.match("memlab: " + record.getMessage())
        if beat and beat["phase"] == "replay" and beat["calls"] != "0":
            self.left -= 1
            if self.left == 0:
                os.write(self.gate, b"go")


def test_off_a_terminal_heartbeat_lines_reach_stderr_and_run_log(memlab_cli, capsys, monkeypatch, tmp_path) -> None:
    """Each worker waits at its second session until two heartbeat lines of the replay have counted calls: the
    replay of two small dialogues took two or three beats of 0.05 s, and with beats ten times as long (a machine ten
    times as fast) none came while it ran."""
    monkeypatch.setenv("CI", "1")
    monkeypatch.syspath_prepend(str(Path(__file__).parent))  # WaitsForBeats, by its module's name
    hold, release = os.pipe()
    monkeypatch.setenv("MEMLAB_TEST_HOLD", str(hold))  # the workers, forked from this process, inherit it
    watch = _ReleaseAfterBeats(release, 2)
    logging.getLogger(PROGRESS_LOGGER).addHandler(watch)
    try:
        waiting = ("sim.workers=2", "context._target_=test_progress.WaitsForBeats")
        assert memlab_cli("run", *SMALL, *waiting, f"hydra.run.dir={tmp_path / 'run'}") == 0
    finally:
        logging.getLogger(PROGRESS_LOGGER).removeHandler(watch)
        os.close(hold)
        os.close(release)
    assert watch.left <= 0  # the replay waited for the beats, not for its bound
    lines = beats(capsys.readouterr().err)
    found = [BEAT.match(line) for line in lines]
    assert len(lines) >= 2 and {m["run"] for m in found if m} == {"run default"}
    calls = [int(m["calls"].replace(",", "")) for m in found if m]
    assert calls == sorted(calls) and calls[-1] > 0  # the workers' calls, counted as they happen
    assert "replay" in {m["phase"] for m in found if m}
    logged = logged_beats(tmp_path / "run")  # the same lines, up to when run.log was written
    assert len(logged) >= 2 and logged == lines[: len(logged)]


def test_a_heartbeat_says_how_far_of_the_runs_sessions_and_how_long_the_replay_has_left(
    memlab_cli, capsys, monkeypatch, tmp_path
) -> None:
    """It gave calls, probes and dialogues done of the run's: with workers, dialogues are counted as the parent takes
    them in order, so a run of a few long dialogues said "0 of 3" for most of its replay."""
    monkeypatch.setenv("CI", "1")
    assert memlab_cli("run", *SMALL, "sim.workers=2", f"hydra.run.dir={tmp_path / 'run'}") == 0
    lines = [line for line in beats(capsys.readouterr().err) if " loading data: " not in line]
    told = [PLACE.search(line) for line in lines]
    assert lines and all(told), lines  # every line once the dataset is read, the replay's among them
    sessions = [int(m["sessions"]) for m in told if m]
    assert sessions == sorted(sessions) and sessions[-1] == 4  # 2 dialogues of 2 sessions
    left = [line for line in lines if "left" in line]
    assert all(re.search(r" \d+ of 4 sessions done, about [\d a-z]+ of replay left, ", line) for line in left)


def test_the_time_left_is_at_the_pace_of_this_replay() -> None:
    """A resumed replay starts with the checkpoint's sessions done: its pace counts only those it replays."""
    beat = Heartbeat("run r", None, dialogues=4, sessions=100)
    beat.replaying(dialogues_done=2, sessions_done=60)
    beat.done[SESSIONS] += 10  # 10 sessions in 20 s: 30 left take 60 s
    assert ", 2 of 4 dialogues, 70 of 100 sessions done, about 1 min 0 s of replay left, " in beat.line(30.0, 20.0)
    beat.done[SESSIONS] += 30
    assert ", 2 of 4 dialogues, 100 of 100 sessions done, 30 s elapsed" in beat.line(30.0, 20.0)


def test_a_resumed_run_counts_the_checkpoints_sessions_done(memlab_run_err, tmp_path) -> None:
    """The resumed replay counted from 0: its last line said 2 of 4 sessions, 1 of 2 dialogues, at its end."""
    store = ("store=sqlite", f"store.path={tmp_path / 'db.sqlite'}", "sim.workers=1")
    assert memlab_run_err(*SMALL, *store, "sim.stop_after_session=3", "output_dir=stop")[0] == 0
    status, err = memlab_run_err(*SMALL, *store, "sim.resume=true", "output_dir=run")
    assert status == 0 and beats(err)[-1:] and ", 2 of 2 dialogues, 4 of 4 sessions done, " in beats(err)[-1]


def test_a_sweep_names_the_job(memlab_cli, capsys, monkeypatch, tmp_path) -> None:
    monkeypatch.setenv("CI", "1")
    long_name = "name=a_sweep_named_at_such_length_that_the_heartbeat_cuts_its_overrides"
    sweep = ("run", "-m", *SMALL, "context=none,trim", long_name, f"hydra.sweep.dir={tmp_path / 'sweep'}")
    assert memlab_cli(*sweep) == 0
    labels = {m["run"] for line in beats(capsys.readouterr().err) if (m := BEAT.match(line))}
    assert {label.split(" (")[0] for label in labels} == {"job 0", "job 1"}
    assert all(label.endswith("[...])") for label in labels)  # cut, and still closed


def test_quiet_when_told(memlab_cli, capsys, monkeypatch, tmp_path) -> None:
    monkeypatch.setenv("CI", "1")
    store = ("store=sqlite", f"store.path={tmp_path / 'db.sqlite'}")
    assert memlab_cli("run", *SMALL, *store, "sim.progress=false", f"hydra.run.dir={tmp_path / 'run'}") == 0
    assert capsys.readouterr().err == ""  # nor the scope, which run.log names
    assert logged_beats(tmp_path / "run")  # run.log still has them
    assert " NOTICE memlab.progress: run default: writes to the store under scope run:" in (
        (tmp_path / "run" / "run.log").read_text()
    )


def test_on_a_terminal_a_bar_and_no_heartbeat_lines(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "CI"} | {"PYTHONPATH": str(ROOT)}
    controller, terminal = pty.openpty()
    fcntl.ioctl(terminal, termios.TIOCSWINSZ, struct.pack("HHHH", 30, 100, 0, 0))  # 0 columns: tqdm draws nothing
    store = ("store=sqlite", f"store.path={tmp_path / 'db.sqlite'}")  # its scope is named beside the bar
    args = [sys.executable, "-m", "memlab", "run", *SMALL, *store, "sim.workers=1", f"hydra.run.dir={tmp_path / 'run'}"]
    with subprocess.Popen(args, cwd=tmp_path, env=env, stdout=subprocess.DEVNULL, stderr=terminal) as child:
        os.close(terminal)
        seen = b""
        while chunk := _read(controller):
            seen += chunk
    os.close(controller)
    assert child.returncode == 0
    text = seen.decode(errors="replace").replace("\r", "\n")
    assert "replay default" in text and beats(text) == []  # tqdm's bar, not heartbeat lines
    assert re.search(r"^memlab: run default: writes to the store under scope run:[0-9a-f]+ \(", text, re.M)
    assert logged_beats(tmp_path / "run")


def _read(fd: int) -> bytes:
    try:
        return os.read(fd, 65536)
    except OSError:  # the child closed the terminal
        return b""


def test_workers_tally_calls_and_probes_as_they_happen(make_config) -> None:
    from memlab.experiment import load_dialogues, runtime_factory

    cfg = make_config("dataset.dialogues=2", "dataset.sessions=2")
    tally = new_tally()
    records = [
        r
        for rs in simulate_parallel(load_dialogues(cfg), runtime_factory, cfg, 2, ReplayOptions(), None, tally)
        for r in rs
    ]
    assert tally[CALLS] == sum(isinstance(r, CallRecord) for r in records) > 0
    assert tally[PROBES] == sum(isinstance(r, ProbeRecord) for r in records) > 0
    assert tally[SESSIONS] == sum(isinstance(r, LifecycleRecord) and r.kind == "session.end" for r in records) == 4
