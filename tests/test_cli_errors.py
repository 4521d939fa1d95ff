"""`memlab run` ends every failure with one line: a target that cannot be built (status 2), Ctrl-C (status
130); neither leaves an empty run folder or a half-written run directory."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

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


def test_ctrl_c_ends_with_one_line_and_no_run_directory(tmp_path: Path) -> None:
    """The defect: SIGINT printed a traceback."""
    big = ("dataset.dialogues=400", "dataset.sessions=30", "dataset.turns_per_session=30")
    proc = subprocess.Popen(
        _memlab(*big), cwd=tmp_path, env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    runs = tmp_path / "reports" / "runs"
    deadline = time.monotonic() + 120
    while not runs.exists() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)  # Hydra makes the run folder just before the run starts
    time.sleep(1.0)
    assert proc.poll() is None, proc.communicate()
    proc.send_signal(signal.SIGINT)
    _out, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    assert err.strip().splitlines() == ["memlab: interrupted; the run directory was not published"]
    assert list(tmp_path.iterdir()) == []  # the empty run folder Hydra made is gone, nothing half-written
