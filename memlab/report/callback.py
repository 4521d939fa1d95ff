"""The Hydra callback that writes a sweep's comparison into its directory when the multirun ends.

Enabled in `conf/config.yaml` (`hydra.callbacks.comparison`); with the joblib or Ray launcher
the jobs run elsewhere, but `on_multirun_end` runs in the launching process, after all of them.
It also leaves the sweep's outcome in `LAST_SWEEP`, from which `memlab run -m` takes its exit
status: non-zero when a job failed or never finished, unless ``sweep.allow_failures=true``, and when no
comparison could be written.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from hydra.experimental.callback import Callback
from omegaconf import DictConfig

from memlab.errors import MemlabError, first_line

# "jobs": SweepJobs, "allow_failures": bool, "dir": Path of the last multirun; "no_comparison": why none was written
LAST_SWEEP: dict[str, Any] = {}


class ComparisonCallback(Callback):
    """Writes comparison.csv|md|html of every job of the sweep (failed ones marked) into the sweep dir."""

    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        LAST_SWEEP["dir"] = sweep_dir = Path(config.hydra.sweep.dir)
        try:
            self._compare(config, sweep_dir)
        except Exception as e:  # left to Hydra, it is a warning and the sweep exits 0 without its comparison
            LAST_SWEEP["no_comparison"] = f"{type(e).__name__}: {first_line(e)}"

    def _compare(self, config: DictConfig, sweep_dir: Path) -> None:
        """Compare the sweep's jobs into its folder; its outcome, and why no comparison was written, in LAST_SWEEP."""
        # Here, not at import: Hydra builds this callback when any run starts, and the report code loads
        # pandas and matplotlib (a single run would pay ~1 s for a comparison it never writes).
        from memlab.report.comparison import cautions, sweep_title, write_comparison
        from memlab.report.rundata import find_runs, load_run
        from memlab.report.sweep import SweepJobs, job_numbers, sweep_jobs, unfinished_notes

        jobs: SweepJobs = sweep_jobs(sweep_dir) if sweep_dir.is_dir() else SweepJobs(None, (), (), ())
        allow = bool(config.get("sweep", {}).get("allow_failures", False))
        LAST_SWEEP.update(jobs=jobs, allow_failures=allow)
        if not (jobs.finished or jobs.failed or jobs.stopped or jobs.missing):
            glob = any("glob(" in str(o) for o in config.hydra.overrides.task)
            LAST_SWEEP["no_comparison"] = "the sweep launched no job" + (
                " (glob(...) picks a config group's entries, as in context=glob(sliding*); a key's values are listed: "
                "context.keep_last=2,4)"
                if glob
                else ""
            )
            return
        if jobs.stopped and not (jobs.finished or jobs.failed):  # checkpoints only: nothing to compare until resumed
            return
        try:
            runs = [load_run(p) for p in find_runs([sweep_dir])]
        except MemlabError as e:
            LAST_SWEEP["no_comparison"] = str(e)
            return
        notes = cautions(runs)
        unfinished = unfinished_notes([sweep_dir], "compared")  # above the table; the line below says it on screen
        title = sweep_title(config.get("name", ""))
        paths = write_comparison(sweep_dir, runs, title=title, notes=[*unfinished, *notes])
        failed = sum(r.failed for r in runs)
        note = f", {failed} failed" if failed else ""
        if jobs.stopped:
            note += f", stopped {job_numbers(jobs.stopped)} (checkpoints, not compared)"
        if jobs.missing:
            note += f", missing {job_numbers(jobs.missing)} (never finished)"
        print(
            f"memlab: compared {len(runs)} configurations{note}; report in {paths['comparison.html'].absolute()}",
            file=sys.stderr,
        )
        for caution in notes:
            print(f"memlab: WARNING: {caution}", file=sys.stderr)
