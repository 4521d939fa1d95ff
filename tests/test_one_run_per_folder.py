"""One run at a time in a run folder: a second run into a folder another run is writing into is refused at its
start, in one line, and leaves that run's folder alone; a holder's end (however it ends) frees the folder."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

import memlab
from memlab.errors import RunFolderBusy

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "datasets" / "sample.jsonl"
HOLD = """
import sys
from pathlib import Path
from memlab.rundir import claimed

with claimed(Path(sys.argv[1])):
    print("held", flush=True)
    sys.stdin.read()
"""


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "tests")]), "CI": "1"}


@contextmanager
def _held(folder: Path) -> Iterator[subprocess.Popen[str]]:
    """Another process holding `folder` as a run does, until the block ends."""
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(folder)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=_env()
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        yield holder
    finally:
        holder.kill()
        holder.wait()


def test_a_second_run_into_a_folder_a_run_is_writing_into_is_refused(
    tmp_path: Path, memlab_run_err: Callable[..., tuple[int, str]]
) -> None:
    """Both runs used to publish, the later over the earlier, and both exit 0 (logger=csv: two rows, one folder)."""
    data = tmp_path / "data.jsonl"
    data.write_bytes(SAMPLE.read_bytes())
    os.mkfifo(tmp_path / "data.jsonl.gate")
    run = tmp_path / "run"
    first = subprocess.Popen(
        [sys.executable, "-m", "memlab", "run", "debug=default", "dataset=jsonl", f"dataset.path={data}",
         "dataset._target_=gated_data.gated", f"output_dir={run}"],
        cwd=tmp_path, env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        with open(tmp_path / "data.jsonl.gate", "w"):  # returns once the first run reads its data: it holds `run`
            status, err = memlab_run_err("debug=default", "context=trim", f"output_dir={run}")
            assert status == 2, err
            assert err == (
                f"memlab: error: {run}: another run (process {first.pid}) is writing into this folder; wait for it "
                "to end or give this run a folder of its own (output_dir=...)\n"
            )
            assert run.is_dir() and not any(run.iterdir())  # the first run's folder, still empty, left to it
        _, err = first.communicate(timeout=300)
    finally:
        first.kill()
    assert first.returncode == 0, err
    assert (run / "metrics.json").is_file() and not (run / "error.json").exists()
    assert "memlab.context.Trim" not in (run / "config.yaml").read_text()  # the first run's, not the refused one's


def test_a_held_folder_is_refused_through_the_api_and_freed_when_its_holder_is_killed(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    (run / "notes.txt").write_text("the holder's")
    with _held(run) as holder:
        with pytest.raises(RunFolderBusy, match=f"another run \\(process {holder.pid}\\) is writing"):
            memlab.run(["debug=default"], run_dir=run)
        assert sorted(p.name for p in run.iterdir()) == ["notes.txt"]
        holder.send_signal(signal.SIGKILL)  # kill -9: nothing is left holding the folder
        holder.wait()
        result = memlab.run(["debug=default"], run_dir=run)
    assert result.run_dir == run and (run / "metrics.json").is_file() and (run / "notes.txt").is_file()


def test_a_second_ablation_into_a_held_folder_is_refused_and_leaves_it(tmp_path: Path) -> None:
    out = tmp_path / "ablation"
    out.mkdir()
    with _held(out):
        done = subprocess.run(
            [sys.executable, "-m", "memlab", "ablate", f"ablate.output_dir={out}", "debug=default"],
            cwd=tmp_path, env=_env(), capture_output=True, text=True, timeout=300,
        )  # fmt: skip
    assert done.returncode == 2 and "is writing into this folder" in done.stderr, done.stderr
    assert out.is_dir() and not any(out.iterdir())
