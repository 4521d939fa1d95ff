"""`memlab compare` as the gate tests call it: in this process, and on an edited copy of a run."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from memlab.cli import main


def compare(capsys: pytest.CaptureFixture[str], *args: object) -> tuple[int, str]:
    """`memlab compare ARGS`: its exit status and what it printed."""
    code, out, _ = compare_streams(capsys, *args)
    return code, out


def compare_streams(capsys: pytest.CaptureFixture[str], *args: object) -> tuple[int, str, str]:
    """`memlab compare ARGS`: its exit status, what it printed and what it said on stderr."""
    with pytest.raises(SystemExit) as exit_info:
        main(["compare", *map(str, args)])
    captured = capsys.readouterr()
    return int(exit_info.value.code or 0), captured.out, captured.err


def edited_copy(run: Path, to: Path, file: str, **changes: float) -> Path:
    """A copy of run folder `run` at `to` whose JSON `file` has `changes` (metric: value) applied."""
    shutil.copytree(run, to)
    data = json.loads((to / file).read_text())
    data.update(changes)
    (to / file).write_text(json.dumps(data))
    return to
