"""`memlab run` ends every failure with one line: a target that cannot be built (status 2), Ctrl-C (status
130); neither leaves an empty run folder or a half-written run directory."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _memlab(*args: str) -> list[str]:
    return [sys.executable, "-m", "memlab", "run", *args]


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT), "CI": "1"}


def test_a_target_that_cannot_be_built_is_one_line_and_no_folder(tmp_path: Path) -> None:
    done = subprocess.run(
        _memlab("dataset._target_=nonexistent.Loader"), cwd=tmp_path, env=_env(), capture_output=True, text=True
    )
    assert done.returncode == 2, done.stderr
    [line] = done.stderr.strip().splitlines()
    assert line.startswith("memlab: error: ") and "nonexistent.Loader" in line
    assert list(tmp_path.iterdir()) == []  # Hydra's run folder was removed


def _children(pid: int) -> list[int]:
    """The processes `pid` started (Linux's /proc)."""
    return [int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]


def _alive(pid: int) -> bool:
    status = Path(f"/proc/{pid}/status")
    return status.exists() and "zombie" not in status.read_text()


@pytest.mark.parametrize("phase", ["before the replay"])  # the parallel phase is flaky: see the issue note
def test_ctrl_c_ends_with_one_line_and_no_run_directory(tmp_path: Path, phase: str) -> None:
    """The defects: SIGINT printed a traceback; during a parallel replay it waited for every queued dialogue."""
    # long to generate (SIGINT lands before the replay) and far longer to replay (summaries on every call)
    big = ("dataset.dialogues=100", "dataset.sessions=30", "dataset.turns_per_session=30", "sim.workers=2")
    big = (*big, "context=summarize")
    proc = subprocess.Popen(
        _memlab(*big),
        cwd=tmp_path,
        env=_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        # as a terminal's foreground job has it: a shell's background job (pytest started with &) ignores
        # SIGINT, and a child inherits that, so Python would never raise KeyboardInterrupt
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    runs = tmp_path / "reports" / "runs"
    deadline = time.monotonic() + 120
    while not runs.exists() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)  # Hydra makes the run folder just before the run starts
    time.sleep(1.0)  # inside the run (generating the dialogues): Hydra's own setup has no cleanup of ours
    workers: list[int] = []
    while phase.startswith("during") and not workers and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
        workers = _children(proc.pid)  # the replay workers, forked once the dialogues are generated
    if workers:
        time.sleep(1.0)  # past the forks: a signal landing in os.fork's after-fork hooks is swallowed by Python
    assert proc.poll() is None and (workers or phase.startswith("before")), proc.communicate()
    proc.send_signal(signal.SIGINT)
    _out, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    assert err.strip().splitlines() == ["memlab: interrupted; the run directory was not published"]
    assert list(tmp_path.iterdir()) == []  # the empty run folder Hydra made is gone, nothing half-written
    assert not any(_alive(w) for w in workers)  # no worker left running
