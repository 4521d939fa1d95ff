"""`memlab run` ends every failure with one line: a target that cannot be built (status 2), Ctrl-C (status
130); neither leaves an empty run folder or a half-written run directory."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hydra.experimental.callback import Callback
from omegaconf import DictConfig

from memlab.cli import CHDIR_REFUSED
from memlab.runtime import Component

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "datasets" / "sample.jsonl"


def _memlab(*args: str) -> list[str]:
    return [sys.executable, "-m", "memlab", "run", *args]


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "tests")]), "CI": "1"}


class InterruptAtJobStart(Callback):
    """A Hydra callback that is Ctrl-C at the one moment memlab's task cannot clean up after: Hydra has
    made the run folder and not yet started the task."""

    def on_job_start(self, config: DictConfig, **kwargs: Any) -> None:
        raise KeyboardInterrupt


class RunsOutOfMemory(Component):
    """A context component whose first session outgrows the machine, as a replay too big for it would."""

    def __init__(self, **knobs: Any) -> None:  # the context group's sweep knobs, unused
        super().__init__()

    def on_session_start(self, runtime: Any, session: Any) -> None:
        raise MemoryError


def test_running_out_of_memory_mid_replay_is_one_line_and_no_folder(tmp_path: Path) -> None:
    args = _memlab("debug=default", "context._target_=test_cli_errors.RunsOutOfMemory")
    done = subprocess.run(args, cwd=tmp_path, env=_env(), capture_output=True, text=True)
    assert done.returncode == 1, done.stderr
    assert done.stderr.splitlines() == [
        "memlab: error: the run ran out of memory; nothing was published (replay fewer dialogues: "
        "sim.max_dialogues=N, or split the dataset)"
    ]
    assert list(tmp_path.rglob("*.json")) == []


def test_a_target_that_cannot_be_built_is_one_line_and_no_folder(tmp_path: Path) -> None:
    done = subprocess.run(
        _memlab("dataset._target_=nonexistent.Loader"), cwd=tmp_path, env=_env(), capture_output=True, text=True
    )
    assert done.returncode == 2, done.stderr
    [line] = done.stderr.strip().splitlines()
    assert line.startswith("memlab: error: ") and "nonexistent.Loader" in line
    assert list(tmp_path.iterdir()) == []  # Hydra's run folder was removed


@pytest.mark.parametrize(
    ("sent", "status", "said"),
    [
        (signal.SIGINT, 130, "memlab: interrupted; the run directory was not published"),
        # Python's default: killed at once, the empty run folder Hydra made left behind (an outside audit)
        (signal.SIGTERM, 143, "memlab: terminated (SIGTERM); the run directory was not published"),
    ],
)
def test_ctrl_c_ends_with_one_line_and_no_run_directory(tmp_path: Path, sent: int, status: int, said: str) -> None:
    """The defect: SIGINT printed a traceback. (What it does to a parallel replay's workers is
    tests/sim/test_parallel_replay.py's: a signal sent from here can land in os.fork's after-fork
    hooks, where Python drops the KeyboardInterrupt.) SIGTERM (kill, timeout, a CI cancel) cleans up the same.

    The signal lands while the run waits for its data (`gated_data`: the test holds the FIFO the run reads), not a
    second after Hydra made the run folder, wherever the run had got to by then at the machine's load."""
    data = tmp_path / "data.jsonl"
    data.write_bytes(SAMPLE.read_bytes())
    os.mkfifo(tmp_path / "data.jsonl.gate")
    work = tmp_path / "work"
    work.mkdir()
    proc = subprocess.Popen(
        _memlab("dataset=jsonl", f"dataset.path={data}", "dataset._target_=gated_data.gated"),
        cwd=work,
        env=_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        # as a terminal's foreground job has it: a shell's background job (pytest started with &) ignores
        # SIGINT, and a child inherits that, so Python would never raise KeyboardInterrupt
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    try:
        with open(tmp_path / "data.jsonl.gate", "w"):  # returns once the run opened it: it is reading its data
            proc.send_signal(sent)
            _out, err = proc.communicate(timeout=120)
    finally:
        proc.kill()
    assert proc.returncode == status, err
    assert err.strip().splitlines() == [said]
    assert list(work.iterdir()) == []  # the run folder Hydra made is gone, nothing half-written


def test_ctrl_c_in_hydras_setup_leaves_no_run_folder(tmp_path: Path) -> None:
    interrupt = "+hydra.callbacks.interrupt._target_=test_cli_errors.InterruptAtJobStart"
    done = subprocess.run(_memlab(interrupt), cwd=tmp_path, env=_env(), capture_output=True, text=True)
    assert done.returncode == 130, done.stderr
    assert done.stderr.strip().splitlines() == ["memlab: interrupted; the run directory was not published"]
    assert list(tmp_path.iterdir()) == []  # reports/runs/<time>, made by Hydra, is gone


@pytest.mark.parametrize("mode", [(), ("-m", "context=trim,none")], ids=["run", "sweep"])
def test_hydras_chdir_is_refused_in_one_line_and_no_folder(tmp_path: Path, mode: tuple[str, ...]) -> None:
    """The defect: with hydra.job.chdir=true, `logger=csv` (its path relative to where memlab started) wrote nothing."""
    done = subprocess.run(
        _memlab(*mode, "hydra.job.chdir=true", "logger=csv"), cwd=tmp_path, env=_env(), capture_output=True, text=True
    )
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip().splitlines()[-1] == f"memlab: error: {CHDIR_REFUSED}"
    assert "Error executing job" not in done.stderr
    assert list(tmp_path.iterdir()) == []  # neither the run folder nor the sweep's, nor their parents
