"""A run directory is published all or nothing: a publisher SIGKILLed at every one of its steps leaves
the old directory or the complete new one (never a new metrics.json beside another run's files), and
the next publish removes what the killed one left behind."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from replays import NO_FIGURES

from memlab.experiment import run_experiment
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


def test_a_file_where_the_run_would_go_is_refused_before_anything_is_read(
    tmp_path: Path, memlab_run_err: Callable[..., tuple[int, str]]
) -> None:
    """Publishing renames into place: a file there was moved aside (and hidden) for the run folder."""
    notes = tmp_path / "notes.txt"
    notes.write_text("mine")
    missing = "dataset=jsonl", f"dataset.path={tmp_path / 'missing.jsonl'}"  # the place is checked before the data
    for where, said in (
        ("notes.txt", "notes.txt: exists and is not a folder; give the run a folder of its own"),
        ("notes.txt/run", "notes.txt/run: cannot make the folder it goes in (File exists)"),
    ):
        status, err = memlab_run_err("debug=default", *missing, f"output_dir={where}")
        assert status == 2 and err == f"memlab: error: {said}\n", err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt"] and notes.read_text() == "mine"


def test_a_run_into_a_used_folder_keeps_no_result_of_the_run_before(
    tmp_path: Path, make_config: Callable[..., Any]
) -> None:
    """The defect: only error.json was dropped, so a run without long-term memory published beside the retrievals
    (and questions.jsonl) of the long-term run before it, and `memlab report` of it showed their re-ranking stages.
    The run's store file is still carried over."""
    folder = tmp_path / "run"
    store = ("store=sqlite", f"store.path={folder / 'memlab.sqlite'}")
    first = make_config("debug=default", NO_FIGURES, "longterm=chat", "eval.answers=true", *store)
    written = set(os.listdir(run_experiment(first, folder).run_dir))
    assert {"retrievals.jsonl", "retrievals.trec", "retrievals.qrels", "questions.jsonl", "memlab.sqlite"} <= written
    run_experiment(make_config("debug=default", NO_FIGURES, *store), folder)
    alone = run_experiment(make_config("debug=default", NO_FIGURES), tmp_path / "alone").run_dir
    assert sorted(os.listdir(folder)) == sorted([*os.listdir(alone), "memlab.sqlite"])
    assert (folder / "metrics.json").read_bytes() == (alone / "metrics.json").read_bytes()


def test_a_run_into_a_link_fills_the_folder_it_names(tmp_path: Path, make_config: Callable[..., Any]) -> None:
    (tmp_path / "real").mkdir()
    (tmp_path / "latest").symlink_to("real")
    result = run_experiment(make_config("debug=default", NO_FIGURES), tmp_path / "latest")
    assert result.run_dir == tmp_path / "real" and (tmp_path / "real" / "metrics.json").is_file()
    assert (tmp_path / "latest").is_symlink() and sorted(p.name for p in tmp_path.iterdir()) == ["latest", "real"]


@pytest.mark.parametrize("umask", [0o022, 0o077])
def test_a_run_folder_gets_the_modes_the_umask_gives(tmp_path: Path, umask: int) -> None:
    """Not the 0700 of a temporary folder: a shared server's or a CI artifact's readers can read reports."""
    before = os.umask(umask)
    try:
        publish(tmp_path / "run", {"metrics.json": "{}"})
    finally:
        os.umask(before)
    assert stat.S_IMODE((tmp_path / "run").stat().st_mode) == 0o777 & ~umask


WRITE_FILES_SIGNALLED = """
import os, signal, sys
from pathlib import Path
import memlab.rundir as rd
if sys.argv[2] == "ignored":
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # as in a job started with `&`
real, sent = os.replace, []
def replace(a, b):
    if not sent:  # Ctrl-C, then SIGTERM, as the first file is renamed into place
        sent.append(1)
        os.kill(os.getpid(), signal.SIGINT)
        os.kill(os.getpid(), signal.SIGTERM)
    real(a, b)
rd.os.replace = replace
rd.write_files(Path(sys.argv[1]), {"comparison.csv": "1", "comparison.md": "2", "comparison.html": "3"})
print("went on")
"""


@pytest.mark.parametrize("ctrl_c", ["ignored", "default"])
def test_a_sigterm_after_a_ctrl_c_while_files_are_renamed_ends_the_writer_once_all_are_in(
    tmp_path: Path, ctrl_c: str
) -> None:
    """`write_files` holds both signals until its last rename; it raised only the first noted again, so a SIGTERM
    after a Ctrl-C the process ignores (or one raised as KeyboardInterrupt first) was lost: the writer went on."""
    out = tmp_path / "sweep"
    done = subprocess.run(
        [sys.executable, "-c", WRITE_FILES_SIGNALLED, str(out), ctrl_c], capture_output=True, text=True
    )
    assert done.returncode == -15 and done.stdout == "", (done.returncode, done.stdout, done.stderr)
    assert sorted(p.name for p in out.iterdir()) == ["comparison.csv", "comparison.html", "comparison.md"]
