"""A run directory is published all or nothing: a publisher SIGKILLed at every one of its steps leaves
the old directory or the complete new one (never a new metrics.json beside another run's files), and
the next publish removes what the killed one left behind."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from memlab.rundir import STAGING_PREFIX, publish

NAMES = ("metrics.json", "calls.csv", "report.html", "config.yaml")
CHILD = """
import os, signal, sys
from pathlib import Path
import memlab.rundir as rd

kill_at, target = int(sys.argv[1]), Path(sys.argv[2])
steps = [0]

def step(fn):
    def inner(*args, **kwargs):
        steps[0] += 1
        if steps[0] == kill_at:
            os.kill(os.getpid(), signal.SIGKILL)
        return fn(*args, **kwargs)
    return inner

for name in ("fsync", "rename", "link"):
    setattr(os, name, step(getattr(os, name)))
rd._exchange = step(rd._exchange)
rd._write_synced = step(rd._write_synced)
rd.shutil.rmtree = step(rd.shutil.rmtree)
rd.publish(target, {n: "new " + n for n in sys.argv[3].split(",")}, replace=("error.json",))
"""


def _snapshot(folder: Path) -> dict[str, str] | None:
    if not folder.exists():
        return None
    return {str(p.relative_to(folder)): p.read_text() for p in sorted(folder.rglob("*")) if p.is_file()}


def _old_run(folder: Path) -> None:
    (folder / "sub").mkdir(parents=True)
    for name, text in {"metrics.json": "old", "calls.csv": "old", "error.json": "old failure"}.items():
        (folder / name).write_text(text)
    (folder / "memlab.sqlite").write_text("the run's store")
    (folder / "sub" / "notes.txt").write_text("kept")


@pytest.mark.parametrize("before", ["absent", "empty", "reused"])
def test_a_publisher_killed_at_any_step_leaves_old_or_new(tmp_path: Path, before: str) -> None:
    target = tmp_path / "runs" / "r1"
    if before == "empty":
        target.mkdir(parents=True)
    elif before == "reused":
        _old_run(target)
    old = _snapshot(target)
    new = {n: "new " + n for n in NAMES}
    if before == "reused":
        new |= {"memlab.sqlite": "the run's store", "sub/notes.txt": "kept"}  # carried over; error.json is not
    kills = 0
    for kill_at in range(1, 60):
        if before == "reused":
            _reset(target)
        elif before == "empty":
            _empty(target)
        else:
            _remove(target)
        run = subprocess.run(
            [sys.executable, "-c", CHILD, str(kill_at), str(target), ",".join(NAMES)], capture_output=True, text=True
        )
        state = _snapshot(target)
        assert state in (old, new), (kill_at, state)
        if run.returncode == 0:
            assert state == new
            break
        assert run.returncode == -9, run.stderr
        kills += 1
        publish(target, {n: "again " + n for n in NAMES}, replace=("error.json",))  # the next run in this folder
        assert not list(target.parent.glob(f"{STAGING_PREFIX}*"))  # the killed publisher's leftovers are gone
        assert {n: (target / n).read_text() for n in NAMES} == {n: "again " + n for n in NAMES}
    assert kills >= 6  # every write, fsync, link and rename was a kill point
    assert not list(target.parent.glob(f"{STAGING_PREFIX}*"))


def _remove(target: Path) -> None:
    import shutil

    shutil.rmtree(target, ignore_errors=True)


def _empty(target: Path) -> None:
    _remove(target)
    target.mkdir(parents=True)


def _reset(target: Path) -> None:
    _remove(target)
    _old_run(target)


def test_a_failed_publish_leaves_the_old_directory_and_no_staging_folder(tmp_path: Path) -> None:
    target = tmp_path / "r1"
    _old_run(target)
    old = _snapshot(target)
    with pytest.raises(TypeError):
        publish(target, {"metrics.json": "new", "calls.csv": 42})  # type: ignore[dict-item]
    assert _snapshot(target) == old
    assert [p.name for p in tmp_path.iterdir()] == ["r1"]
