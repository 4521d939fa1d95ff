"""Which jobs a sweep launched, from the `multirun.yaml` Hydra keeps in its directory, and which never finished.

A job that finished has a run directory (`metrics.json`) or a failure marker (`error.json`) in
``<sweep>/<job number>``; a killed or never-started job has neither, and is listed as missing.
The count of jobs is known for the basic sweeper (the product of the swept values) and for
optuna (`n_trials`); for other sweepers only the jobs with a folder are known.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

from omegaconf import DictConfig, OmegaConf

from memlab.report.rundata import ERROR_FILE, METRICS_FILE

MULTIRUN_FILE = "multirun.yaml"


@dataclass(frozen=True)
class SweepJobs:
    """A sweep's job numbers by outcome."""

    expected: int | None
    finished: tuple[int, ...]
    failed: tuple[int, ...]
    missing: tuple[int, ...]


def expected_jobs(sweep_dir: Path) -> int | None:
    """How many jobs the sweep launches, from its multirun.yaml (None when it cannot be told)."""
    path = sweep_dir / MULTIRUN_FILE
    if not path.is_file():
        return None
    loaded = OmegaConf.load(path)
    hydra = loaded.get("hydra", {}) if isinstance(loaded, DictConfig) else {}
    sweeper = str(hydra.get("sweeper", {}).get("_target_", ""))
    if "optuna" in sweeper.lower():
        trials = hydra["sweeper"].get("n_trials")
        return int(trials) if trials is not None else None
    if not sweeper.endswith("BasicSweeper"):
        return None
    from hydra.core.override_parser.overrides_parser import OverridesParser

    parsed = OverridesParser.create().parse_overrides(list(hydra.get("overrides", {}).get("task", [])))
    sizes = [len(list(o.sweep_string_iterator())) for o in parsed if o.is_sweep_override()]
    return math.prod(sizes)


def sweep_jobs(sweep_dir: Path) -> SweepJobs:
    """The sweep's jobs: finished (metrics.json), failed (error.json), missing (expected but neither)."""
    finished, failed, present = [], [], set()
    for child in sweep_dir.iterdir():
        if not (child.is_dir() and child.name.isdigit()):
            continue
        num = int(child.name)
        if (child / METRICS_FILE).is_file():
            finished.append(num)
            present.add(num)
        elif (child / ERROR_FILE).is_file():
            failed.append(num)
            present.add(num)
    expected = expected_jobs(sweep_dir)
    known = range(expected) if expected is not None else range(max(present, default=-1) + 1)
    dirs = {int(c.name) for c in sweep_dir.iterdir() if c.is_dir() and c.name.isdigit()}
    missing = sorted(n for n in set(known) | dirs if n not in present)
    return SweepJobs(expected, tuple(sorted(finished)), tuple(sorted(failed)), tuple(missing))
