"""Which jobs a sweep launched, from the `multirun.yaml` Hydra keeps in its directory, and which never finished.

A job that finished has a run directory (`metrics.json`) or a failure marker (`error.json`) in
``<sweep>/<job number>_<what it varies>`` (or ``<sweep>/<job number>``, as sweeps made before named
them); a job stopped on purpose at `sim.stop_after_session` has its checkpoint's marker (`stopped.json`);
a killed or never-started job has none of them, and is listed as missing.
The count of jobs is known for the basic sweeper (the product of the swept values) and for
optuna (`n_trials`); for other sweepers, and a basic sweep with ``glob(...)``, only the jobs with a folder are known.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import yaml

from memlab.errors import MemlabError, first_line
from memlab.naming import MULTIRUN_FILE, sweep_overrides, sweep_settings
from memlab.report.rundata import ERROR_FILE, METRICS_FILE, STOPPED_FILE


@dataclass(frozen=True)
class SweepJobs:
    """A sweep's job numbers by outcome (stopped: at `sim.stop_after_session`, its checkpoint saved)."""

    expected: int | None
    finished: tuple[int, ...]
    failed: tuple[int, ...]
    missing: tuple[int, ...]
    stopped: tuple[int, ...] = ()


def expected_jobs(sweep_dir: Path) -> int | None:
    """How many jobs the sweep launches, from its multirun.yaml (None when it cannot be told)."""
    try:
        hydra = sweep_settings(sweep_dir)
    except (yaml.YAMLError, UnicodeDecodeError) as e:  # a file Hydra wrote, edited or damaged since
        raise MemlabError(f"{sweep_dir / MULTIRUN_FILE}: not a readable multirun.yaml ({first_line(e)})") from None
    if hydra is None:
        return None
    sweeper = hydra.get("sweeper") or {}
    target = str(sweeper.get("_target_", ""))
    if "optuna" in target.lower():
        trials = sweeper.get("n_trials")
        return int(trials) if trials is not None else None
    if not target.endswith("BasicSweeper"):
        return None
    from hydra.core.override_parser.types import ValueType  # loaded by sweep_overrides already

    swept = [o for o in sweep_overrides(hydra) if o.is_sweep_override()]
    if any(o.value_type == ValueType.GLOB_CHOICE_SWEEP for o in swept):  # matched against the config groups Hydra
        return None  # searched then, which multirun.yaml does not record
    return math.prod(len(list(o.sweep_string_iterator())) for o in swept)


def job_number(folder: Path) -> int | None:
    """The job number a sweep's job folder starts with (``3_context=trim`` or ``3``), None for other folders.

    >>> job_number(Path("3_context=trim,max_tokens=1000")), job_number(Path("12")), job_number(Path(".staging-1"))
    (3, 12, None)
    """
    number, _, _ = folder.name.partition("_")
    return int(number) if number.isdigit() else None


def sweep_jobs(sweep_dir: Path) -> SweepJobs:
    """The sweep's jobs: finished (metrics.json), failed (error.json), stopped (stopped.json), missing (expected
    but none)."""
    finished, failed, stopped, dirs = [], [], [], set()
    for child in sweep_dir.iterdir():
        num = job_number(child) if child.is_dir() else None
        if num is None:
            continue
        dirs.add(num)
        if (child / METRICS_FILE).is_file():
            finished.append(num)
        elif (child / ERROR_FILE).is_file():
            failed.append(num)
        elif (child / STOPPED_FILE).is_file():
            stopped.append(num)
    present = {*finished, *failed, *stopped}
    expected = expected_jobs(sweep_dir)
    known = range(expected) if expected is not None else range(max(present, default=-1) + 1)
    missing = sorted(n for n in set(known) | dirs if n not in present)
    return SweepJobs(expected, tuple(sorted(finished)), tuple(sorted(failed)), tuple(missing), tuple(sorted(stopped)))


def never_finished(folder: Path) -> tuple[int, ...]:
    """The jobs of sweep `folder` that never finished (killed, or never started); none if `folder` is no sweep's.

    `memlab report`, `compare` and `recommend` say so: read as the sweep, the jobs that finished stand for it, and
    a configuration no job ran is simply absent (a baseline written from it would never gate that configuration).
    """
    if not (folder / MULTIRUN_FILE).is_file():
        return ()
    return sweep_jobs(folder).missing


def never_finished_note(folder: Path) -> str:
    """`memlab: FOLDER: job(s) N, M never finished`, the line the commands reading a sweep print ("" if none)."""
    missing = never_finished(folder)
    return f"{folder}: {job_numbers(missing)} never finished" if missing else ""


def stopped_note(folder: Path) -> str:
    """`FOLDER: job(s) N stopped at sim.stop_after_session` ("" if none): jobs that left a checkpoint, no metrics,
    so their configurations are as absent from the sweep as those of jobs that never finished."""
    stopped = sweep_jobs(folder).stopped if (folder / MULTIRUN_FILE).is_file() else ()
    return f"{folder}: {job_numbers(stopped)} stopped at sim.stop_after_session" if stopped else ""


def unfinished_notes(folders: Sequence[Path], what: str) -> list[str]:
    """`FOLDER: job(s) N never finished: their configurations are not WHAT`, and the same for jobs stopped at
    `sim.stop_after_session`, for each sweep among `folders`: what the commands reading them warn of, and what
    a comparison of them says above its table (the configurations it lacks)."""
    notes = (note for folder in folders for note in (never_finished_note(folder), stopped_note(folder)))
    return [f"{note}: their configurations are not {what}" for note in notes if note]


def job_numbers(jobs: Sequence[int]) -> str:
    """`job(s) 3, 5`: a sweep's jobs, as the commands name them."""
    return f"job(s) {', '.join(map(str, jobs))}"
