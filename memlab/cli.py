"""Command line: `memlab run` (Hydra) and the report commands; argument handling on top of the library.

- `memlab run [overrides]`: one run; `memlab run -m a=1,2 b=x,y` sweeps (Hydra multirun);
- `memlab report DIR...`: rebuild a run's report, or a comparison of run or sweep directories;
- `memlab compare BASELINE CANDIDATE`: the regression gate (exit status 1 on a regression);
- `memlab recommend DIR --budget N`: the best configuration under a token budget, and why;
- `memlab ablate [overrides]`: the long-term pipeline, full and with each part off, with paired bootstrap CIs.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import shlex
import signal
import sys
import textwrap
import threading
import traceback
from collections.abc import Iterator, Sequence
from importlib import resources
from pathlib import Path
from typing import Any

import hydra
from hydra.core.hydra_config import HydraConfig
from hydra.errors import ConfigCompositionException, HydraException, InstantiationException
from hydra.experimental.callback import Callback
from hydra.types import RunMode
from omegaconf import DictConfig, ListConfig, OmegaConf, open_dict
from omegaconf.errors import InterpolationResolutionError, OmegaConfBaseException

from memlab import __version__, completion, config
from memlab.config_keys import ConfigKeyProblem, check_keys, explain_error, one_line, root_cause
from memlab.errors import MemlabError, MissingExtraError, RunFolderBusy

CONFIG_MODULE = "memlab.conf"  # the top-level conf/, shipped in the wheel as this package
CONFIG_PATH = f"pkg://{CONFIG_MODULE}"
USAGE = """usage: memlab COMMAND [ARGS]

commands:
  run [overrides...]                 replay a dataset through the configured strategies (Hydra; -m to sweep)
  report DIR... [-o OUT]             rebuild a run's report, or compare run / sweep directories
  compare BASELINE CANDIDATE         compare metric by metric; exit status 1 on a regression
  recommend DIR --budget N           the best configuration of a sweep under a token budget, and why
  ablate [overrides...]              long-term retrieval, full pipeline vs each part off, with 95% CIs

`memlab COMMAND --help` describes each command's options; `memlab --version` prints the version. Shell
completion (bash, zsh, fish):
  eval "$(memlab run -sc install=bash)"
"""
_ABSENT = object()  # `OmegaConf.select`'s answer for a key the config does not have
# The config groups a user picks from, one line each in `memlab run --help` (tests check every
# folder of conf/ is here or in INTERNAL_GROUPS).
GROUP_HELP = {
    "dataset": "the dialogues to replay",
    "context": "how each request is cropped (context.max_tokens, keep_first, keep_last, threshold, counter)",
    "memory": "what is done to the stored history, at session ends or every N turns",
    "agent_memory": "the stored history: plain, or compressed (windowed, hybrid, per task)",
    "longterm": "long-term memory: extraction, retrieval and injection",
    "store": "where histories and long-term records live",
    "llm": "the model behind summaries, extraction and answers",
    "embedder": "the embeddings of long-term retrieval",
    "policy": "who calls the memory tools: the model (litellm tool calling) or the offline rules",
    "logger": "where each finished run is also recorded: csv (one row per run), mlflow",
    "hooks": "extra components, e.g. +hooks@hooks.summarization=summarization",
    "experiment": "a named experiment (a preset sweep or comparison)",
    "debug": "a tiny slice to try a command in seconds; profile adds cProfile",
    "hparams_search": "an optuna search over the context knobs (extra optuna)",
    "local": "this machine's settings, from conf/local/default.yaml when present",
}
INTERNAL_GROUPS = ("hydra", "schema")
RUN_USAGE = """usage: memlab run [-m] [GROUP=ENTRY ...] [KEY=VALUE ...]

Replay a dataset through the configured strategies and write a run directory under reports/.
-m sweeps: comma-separated values run one job each (context=trim,sliding_window), compared at the end.

config groups (GROUP=ENTRY; * marks the default):
{groups}

Any key of the composed config is a KEY=VALUE override (seed=1, context.max_tokens=2000);
`memlab run --help GROUP=ENTRY` (context=trim) or `--help SECTION` (sim, eval) lists its keys with their
defaults, valid ranges and meaning. `--cfg job` prints the config without running, `--info` shows where
it came from. Hydra's other flags: `--hydra-help`.
"""


CHDIR_REFUSED = (
    "hydra.job.chdir=true is not supported: memlab reads relative paths (dataset.path, store.path, logger.path) "
    "from the folder it starts in and writes each run's files into its run folder itself"
)


@hydra.main(version_base=None, config_path=CONFIG_PATH, config_name="config")
def _run(cfg: DictConfig) -> float | None:
    """One run (or one job of a sweep); returns the objective value for sweepers such as optuna."""
    from memlab.experiment import objective_value, run_experiment
    from memlab.llm.base import LLMError
    from memlab.report import write_error
    from memlab.report.rundata import write_stopped

    hc = HydraConfig.get()
    hydra_dir = Path(hc.runtime.output_dir)
    if hc.job.chdir:  # here, not raised: Hydra would log a job error of its own above the line
        os.chdir(hc.runtime.cwd)  # where the folders' relative names start
        _discard_if_empty(hydra_dir)
        _discard_sweep_stub()
        print(f"memlab: error: {CHDIR_REFUSED}", file=sys.stderr)
        sys.exit(2)
    run_dir = Path(cfg.output_dir) if cfg.output_dir else hydra_dir
    overrides = list(hc.overrides.task)
    if hc.mode == RunMode.MULTIRUN:
        check_keys(cfg)  # outside the job's error handling (`_check_batch` checked every job before any ran)
        _check_logger(cfg)  # and so does a logger whose library is missing, as it stops a single run at its start
        # One failing configuration must not stop the sweep: mark its job and carry on.
        try:
            result = run_experiment(cfg, run_dir, overrides=overrides)
        except RunFolderBusy as e:  # the folder is another run's: no failure marker in it
            print(f"memlab: job {hc.job.num} not run: {e}", file=sys.stderr)
            return _worst(hc.sweeper)
        except Exception as e:
            cause = root_cause(e)
            write_error(run_dir, cause, overrides, traceback.format_exc())
            print(
                f"memlab: job {hc.job.num} failed ({type(cause).__name__}: {cause}); marked in {run_dir}",
                file=sys.stderr,
            )
            return _worst(hc.sweeper)
        if result.stopped:  # a checkpoint, no run: marked, so the sweep tells it from a job that never finished
            write_stopped(run_dir, result.stopped, cfg.sim.stop_after_session, overrides)
            print(
                f"memlab: job {hc.job.num} stopped after session {cfg.sim.stop_after_session}; checkpoint "
                f"{result.stopped!r} saved ({_how_to_resume(cfg, hydra_dir)})",
                file=sys.stderr,
            )
            return _worst(hc.sweeper)
        print(f"memlab: {result.metrics['calls']} calls; results in {result.run_dir}", file=sys.stderr)
        _note_warm_store(cfg, result.run_dir)
        value = objective_value(result.metrics, cfg.objective)
        return _worst(hc.sweeper) if math.isnan(value) else value
    try:
        result = run_experiment(cfg, run_dir, overrides=overrides)
    except RunFolderBusy as e:  # the folder, even empty, is the other run's
        print(f"memlab: error: {e}", file=sys.stderr)
        sys.exit(2)
    except (MemlabError, InstantiationException, InterpolationResolutionError) as e:
        _discard_if_empty(run_dir)
        print(f"memlab: error: {one_line(root_cause(e))}", file=sys.stderr)
        sys.exit(2)
    except LLMError as e:  # a model call no strategy falls back from (the tool policy's): the run cannot go on
        _discard_if_empty(run_dir)
        print(f"memlab: error: a model call failed mid-run; nothing was published: {one_line(e)}", file=sys.stderr)
        sys.exit(1)
    except MemoryError:  # the replay outgrew the machine (the loaders refuse a file too big to load at all)
        _discard_if_empty(run_dir)
        print(
            "memlab: error: the run ran out of memory; nothing was published (replay fewer dialogues: "
            "sim.max_dialogues=N, or split the dataset)",
            file=sys.stderr,
        )
        sys.exit(1)
    except BaseException:  # Ctrl-C or a bug: publishing is all or nothing, so only an empty folder can be left
        _discard_if_empty(run_dir)
        raise
    finally:
        if hydra_dir != run_dir:  # Hydra made its own run folder, unused when output_dir is set
            _discard_if_empty(hydra_dir)
    if result.stopped:  # nothing published: the folder Hydra made for the run is not left behind
        _discard_if_empty(run_dir)
        where = _how_to_resume(cfg, hydra_dir)
        print(f"memlab: stopped after session {cfg.sim.stop_after_session}; checkpoint saved ({where})")
        return math.nan
    print(f"memlab: {result.metrics['calls']} calls; results in {result.run_dir}")
    print(f"memlab: report in {result.run_dir / 'report.html'}")
    _note_warm_store(cfg, result.run_dir)
    return objective_value(result.metrics, cfg.objective)


def _note_warm_store(cfg: DictConfig, run_dir: Path) -> None:
    """Say on screen what only manifest.json says otherwise: a warm store's metrics depend on the runs before.

    A warm store that held nothing when the run started (a new one) is said to have held nothing: with a
    relative `store.path`, the usual cause, each run's store is a new file in its own folder.
    """
    if not cfg.sim.reuse_store:
        return
    manifest = json.loads((run_dir / "manifest.json").read_text(encoding="utf-8"))
    if manifest["store"]["earlier_state"] is not None:
        print(
            "memlab: note: sim.reuse_store=true: the run read and wrote what earlier runs left in the store, "
            "so its metrics depend on them (manifest.json: store.earlier_state)",
            file=sys.stderr,
        )
        return
    path = OmegaConf.select(cfg, "store.path")
    why = (
        f" (store.path={path} is relative: each run's store is a new file in its own folder; an absolute "
        "store.path shares one store between runs)"
        if path is not None and not Path(path).is_absolute()
        else ""
    )
    print(f"memlab: note: sim.reuse_store=true: the store held nothing when the run started{why}", file=sys.stderr)


def _how_to_resume(cfg: DictConfig, hydra_dir: Path) -> str:
    """The resume's overrides: a SQLite file by its absolute path (a relative one lands in each run's new folder)."""
    path = OmegaConf.select(cfg, "store.path")
    if path is None or Path(path).is_absolute():
        return "resume: sim.resume=true"
    file = (Path(OmegaConf.select(cfg, "store.run_dir") or hydra_dir) / path).absolute()
    override = shlex.quote(f'store.path="{file}"')  # quoted for Hydra, then for the shell
    return f"in {file}; resume: sim.resume=true {override}"


def _check_logger(cfg: DictConfig) -> None:
    """`MissingExtraError` when the run's logger writes through a library that is not installed (`logger=mlflow`)."""
    from hydra.utils import get_class

    from memlab.tracking import RunLogger

    target = OmegaConf.select(cfg, "logger._target_")
    found = get_class(target) if target else None
    if isinstance(found, type) and issubclass(found, RunLogger):
        found.check_installed()


def _search_stop_problem(config: DictConfig) -> str | None:
    """Why a search (a sweeper with a direction: optuna) cannot do the stop or resume it is asked to, else None.

    Its later trials are drawn from the earlier trials' values: a stopped trial is recorded as the worst value,
    so the resumed search draws other trials than the stopped one, whose checkpoints it never finds.
    """
    sweeper, sim = config.hydra.sweeper, config.get("sim")
    if sweeper.get("direction") is None or sim is None or not (sim.stop_after_session or sim.resume):
        return None
    key = "sim.stop_after_session" if sim.stop_after_session else "sim.resume"
    return (
        f"{key} in a search ({sweeper._target_}): its later trials depend on the earlier ones' values, so a "
        "stopped search cannot be resumed; stop and resume single runs or a basic sweep (-m) instead"
    )


def _sweep_start_problem(config: DictConfig) -> str | None:
    """Why a sweep must not start (before Hydra writes into its folder, before any job), else None."""
    sweep = Path(config.hydra.sweep.dir)
    if config.get("output_dir"):  # every job would publish into it, each replacing the one before
        return (
            f"output_dir={config.output_dir} in a sweep (-m, or a preset that sweeps, such as hparams_search=...): "
            "every job would publish into that one folder, each replacing the one before; leave output_dir out (each "
            "job writes into hydra.sweep.dir/<n>_<what it varies>/) and set hydra.sweep.dir=DIR to choose the "
            "sweep's folder"
        )
    if sweep.is_dir() and any(sweep.iterdir()):  # its comparison, gate and recommendation would read them too
        return (
            f"hydra.sweep.dir={sweep} is not empty (an earlier sweep's jobs would be compared as this one's); "
            f"remove it first (rm -r {shlex.quote(str(sweep))}) or give the sweep another folder"
        )
    return _search_stop_problem(config)  # a stopped search would publish trials it cannot resume


def _worst(sweeper: DictConfig) -> float:
    """The worst objective for the sweeper's direction: optuna records it as a bad trial, not a crash."""
    direction = sweeper.get("direction")
    if direction is None:
        return math.nan  # the basic sweeper ignores return values
    return -math.inf if "max" in str(direction).lower() else math.inf


def _forget_last_sweep() -> None:
    """Clear the previous sweep's outcome: a single run after a failed sweep in one process must not inherit it."""
    from memlab.report.callback import LAST_SWEEP

    LAST_SWEEP.clear()


def _sweep_status() -> int:
    """The exit status of a finished `memlab run -m`: 1 if a job failed or never finished (unless allowed) or no
    comparison was written; a job stopped at `sim.stop_after_session` did as told."""
    from memlab.report.callback import LAST_SWEEP
    from memlab.report.sweep import job_numbers

    status = 0
    if "no_comparison" in LAST_SWEEP:
        _discard_sweep_stub()  # a sweep that launched no job leaves no folder that would refuse its re-run
        print(
            f"memlab: error: no comparison written in {LAST_SWEEP['dir']}: {LAST_SWEEP['no_comparison']}",
            file=sys.stderr,
        )
        status = 1
    jobs = LAST_SWEEP.get("jobs")
    if jobs is not None and jobs.stopped:  # on purpose: not a failure (docs/memory.md)
        print(
            f"memlab: {job_numbers(jobs.stopped)} stopped at sim.stop_after_session, their checkpoints "
            "saved; resume: the same sweep with sim.resume=true (into a new hydra.sweep.dir)",
            file=sys.stderr,
        )
    if jobs is None or not (jobs.failed or jobs.missing):
        return status
    parts = [f"{job_numbers(jobs.failed)} failed"] if jobs.failed else []
    if jobs.missing:
        parts.append(f"{job_numbers(jobs.missing)} never finished")
    where = LAST_SWEEP["dir"]
    if LAST_SWEEP.get("allow_failures"):
        print(f"memlab: {'; '.join(parts)} in {where} (allowed by sweep.allow_failures)", file=sys.stderr)
        return status
    print(f"memlab: error: {'; '.join(parts)} in {where}; sweep.allow_failures=true to accept", file=sys.stderr)
    return 1


def _discard_if_empty(run_dir: Path) -> None:
    """Remove `run_dir` if empty, and below the current directory the empty folders made for it."""
    path, cwd = run_dir.resolve(), Path.cwd().resolve()
    under_cwd = cwd in path.parents
    while True:
        try:
            path.rmdir()
        except OSError:
            return
        path = path.parent
        if not under_cwd or path == cwd:
            return


class OutputFolders(Callback):
    """Remembers where the run or sweep writes, so that one stopped at start leaves no folder behind.

    The run's folder is read before Hydra makes it (`hydra.run.dir`'s ``${now:...}`` is resolved once
    per config: Hydra caches it, so this is the name Hydra then gives the folder), and only a folder
    that did not exist yet is remembered: an empty folder of the user's own is never removed.
    """

    run: Path | None = None
    sweep: Path | None = None

    @classmethod
    def forget(cls) -> None:
        """Before a command: nothing of an earlier one in the same process (tests run several) is removed."""
        cls.run = cls.sweep = None

    def on_run_start(self, config: DictConfig, **kwargs: object) -> None:
        run = Path(config.hydra.run.dir)
        OutputFolders.run = None if run.exists() else run

    def on_multirun_start(self, config: DictConfig, **kwargs: object) -> None:
        problem = _sweep_start_problem(config)
        if problem is not None:  # exited, not raised: Hydra turns a callback's exception into a warning and sweeps on
            print(f"memlab: error: {problem}", file=sys.stderr)
            sys.exit(2)
        OutputFolders.sweep = Path(config.hydra.sweep.dir)


def _discard_sweep_stub() -> None:
    """After a sweep stopped at start, remove its folder if it holds only multirun.yaml and empty job folders."""
    sweep_dir = OutputFolders.sweep
    if sweep_dir is None or not (sweep_dir / "multirun.yaml").is_file():
        return
    if any(p.is_file() and p.name != "multirun.yaml" for p in sweep_dir.iterdir()):
        return
    for job in sweep_dir.iterdir():
        if job.is_dir():
            _discard_if_empty(job)
    if [p.name for p in sweep_dir.iterdir()] == ["multirun.yaml"]:
        (sweep_dir / "multirun.yaml").unlink()
        _discard_if_empty(sweep_dir)


def _report(argv: list[str]) -> int:
    from memlab.naming import MULTIRUN_FILE
    from memlab.report import find_runs, load_run, run_files
    from memlab.report.comparison import cautions, sweep_title, write_comparison
    from memlab.report.sweep import unfinished_notes

    parser = argparse.ArgumentParser(prog="memlab report", description="Rebuild reports from run directories.")
    parser.add_argument("dirs", nargs="+", type=Path, help="run directories or sweep directories")
    parser.add_argument("-o", "--out", type=Path, help="where to write comparison.* (default: the one DIR given)")
    args = parser.parse_args(argv)
    runs = [load_run(p) for p in find_runs(args.dirs)]
    unfinished = unfinished_notes(args.dirs, "compared")  # said in the comparison too, above its table
    for note in unfinished:
        print(f"memlab: {note}", file=sys.stderr)
    if len(args.dirs) == 1 and len(runs) == 1 and runs[0].path == args.dirs[0]:
        run = runs[0]
        if run.failed:  # no metrics, no report: a comparison of it would be one failed row
            error = run.error or {}
            raise MemlabError(f"{run.path}: the run failed ({error.get('type')}: {error.get('message')}); no report")
        for name in ("report.md", "report.html"):
            (run.path / name).write_text(run_files(run)[name], encoding="utf-8")
        print(f"memlab: report in {run.path / 'report.html'}")
        return 0
    out = args.out or (args.dirs[0] if len(args.dirs) == 1 else None)
    if out is None:
        raise MemlabError("memlab report with several directories needs -o OUT (where to write comparison.*)")
    if out.exists() and not out.is_dir():
        raise MemlabError(f"-o {out}: is a file; expected a folder to write comparison.* in")
    sweep = len(args.dirs) == 1 and (args.dirs[0] / MULTIRUN_FILE).is_file()  # titled as the sweep titled it
    finished = [r.name for r in runs if not r.failed] or [r.name for r in runs]
    notes = cautions(runs)
    title = sweep_title(finished[0]) if sweep else None
    paths = write_comparison(out, runs, title=title, notes=[*unfinished, *notes])
    print(f"memlab: compared {len(runs)} runs; report in {paths['comparison.html']}")
    for note in notes:
        _warn(note)
    return 0


def _warn(note: str) -> None:
    """Print `memlab: WARNING: note` to stderr."""
    print(f"memlab: WARNING: {note}", file=sys.stderr)


def _warn_unfinished(folders: Sequence[Path], what: str) -> None:
    """Warn of each sweep among `folders` whose jobs never finished or stopped at a checkpoint: their configurations
    are not `what` (compared)."""
    from memlab.report.sweep import unfinished_notes

    for note in unfinished_notes(folders, what):
        _warn(note)


def _compare(argv: list[str]) -> int:
    from memlab.report.gate import (
        LATENCY_GATE,
        baseline_json,
        cache_notes,
        check_ratio_targets,
        compare_sides,
        failed,
        failed_configurations,
        format_rows,
        load_rules,
        provenance_notes,
        read_side,
    )
    from memlab.report.sweep import never_finished_note, stopped_note

    parser = argparse.ArgumentParser(
        prog="memlab compare", description="Compare a candidate's metrics with a baseline's; exit 1 on a regression."
    )
    parser.add_argument("baseline", type=Path, help="run dir, sweep dir, or baseline JSON (as --update writes it)")
    parser.add_argument("candidate", type=Path, help="run dir, sweep dir, baseline JSON, or a run's metrics.json")
    parser.add_argument(
        "--tolerances", type=Path, help="YAML of rules overriding the metric registry's directions and tolerances"
    )
    parser.add_argument("--all", action="store_true", help="print every metric, not only those that moved")
    parser.add_argument(
        "--latency", action="store_true", help="fail on latencies too (ratios to each run's reference; noisy in CI)"
    )
    parser.add_argument(
        "--format", choices=("table", "json", "junit"), default="table", help="table (default), json, or JUnit XML"
    )
    parser.add_argument(
        "--update", action="store_true", help="accept the candidate: write it to BASELINE (a .json path)"
    )
    parser.add_argument(
        "--keep-failed",
        action="store_true",
        help="with --update: record the candidate's failed configurations too (refused otherwise)",
    )
    args = parser.parse_args(argv)
    rules = load_rules(args.tolerances) + ([LATENCY_GATE] if args.latency else [])
    if args.keep_failed and not args.update:
        raise MemlabError("--keep-failed goes with --update (it says what the baseline written may hold)")
    if args.update:  # before reading: a sweep of checkpoints alone reads as no sweep at all
        if args.baseline.is_dir():
            raise MemlabError(f"--update writes a baseline JSON file; {args.baseline} is a directory")
        # Written, the baseline would leave those jobs' configurations out: never gated again.
        for note, why, way in (
            (never_finished_note(args.candidate), "killed, or not started", "run the sweep to its end"),
            (
                stopped_note(args.candidate),
                "a checkpoint, no metrics",
                "resume them: the same sweep with sim.resume=true",
            ),
        ):
            if note:
                raise MemlabError(
                    f"{note} ({why}); {args.baseline} was not written ({way}, into a new hydra.sweep.dir)"
                )
    else:
        _warn_unfinished([args.baseline, args.candidate], "compared")  # those jobs' configurations: in neither side
    candidate_side = read_side(args.candidate, metrics_file=True)
    baseline_side = None if args.update else read_side(args.baseline)
    candidate = candidate_side.metrics
    baseline = None if baseline_side is None else baseline_side.metrics
    check_ratio_targets(rules, candidate, *([] if baseline is None else [baseline]))
    if args.update:
        broken = failed_configurations(candidate)
        if broken and not args.keep_failed:
            which = (
                "the run failed"
                if broken == [""]
                else f"{len(broken)} configuration{'s' if len(broken) > 1 else ''} failed ({', '.join(broken)})"
            )
            raise MemlabError(
                f"{args.candidate}: {which}; {args.baseline} was not written (--keep-failed records failures in it)"
            )
        args.baseline.parent.mkdir(parents=True, exist_ok=True)
        args.baseline.write_text(baseline_json(candidate, rules, candidate_side.provenance()), encoding="utf-8")
        print(f"memlab: baseline {args.baseline} updated from {args.candidate}")
        return 0
    assert baseline_side is not None and baseline is not None
    rows = compare_sides(baseline, candidate, rules)
    # the table's reader is told before it; --format json carries them too
    warnings = provenance_notes(baseline_side.provenance(), candidate_side.provenance())
    warnings += cache_notes(baseline, candidate)
    for note in warnings:
        _warn(note)
    if args.format == "table":
        print(format_rows(rows, show_all=args.all))
    else:
        from memlab.report.gate_formats import rows_json, rows_junit

        print(rows_json(rows, warnings) if args.format == "json" else rows_junit(rows, warnings), end="")
    return 1 if failed(rows) else 0


def _budget(text: str) -> float:
    """A budget of tokens: a finite number above zero (argparse says which value it refused)."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of tokens above 0")
    return value


def _recommend(argv: list[str]) -> int:
    from memlab.report import find_runs, load_run
    from memlab.report.comparison import comparison_table, data_note, override_spellings
    from memlab.report.recommend import recommend

    parser = argparse.ArgumentParser(
        prog="memlab recommend", description="The best configuration under a token budget."
    )
    parser.add_argument("dirs", nargs="+", type=Path, help="sweep directories or run directories")
    parser.add_argument("--budget", type=_budget, required=True, help="token budget per call (above 0)")
    parser.add_argument(
        "--budget-metric", default="tokens.prompt.mean", help="tokens.prompt.mean (default) or tokens.prompt.p95"
    )
    parser.add_argument(
        "--by",
        default="context.evidence_retention",
        help="the metric to maximize (default: context.evidence_retention)",
    )
    args = parser.parse_args(argv)
    runs = [load_run(p) for p in find_runs(args.dirs)]
    _warn_unfinished(args.dirs, "considered")  # a configuration no job ran cannot be recommended
    note = data_note(runs)
    if note:  # a pick among runs of different data (a seed sweep) may pick the data, not the configuration
        _warn(note)
    frame, spelled = comparison_table(runs), override_spellings(runs)
    rec = recommend(frame, args.budget, budget_metric=args.budget_metric, by=args.by, spelled=spelled)
    print(("recommended: " if rec.best else "no recommendation: ") + rec.reasons[0])
    for line in rec.reasons[1:]:
        print(line)
    return 0 if rec.best else 1


ABLATE_USAGE = """usage: memlab ablate [ablate.KEY=VALUE ...] [run overrides ...]

Run the full long-term pipeline and each variant of conf/ablate.yaml on the same data, then write
ablation.md|csv|json: recall@1/5/10 and nDCG@10 per variant, its difference to the full pipeline
and a paired bootstrap confidence interval over the questions. Default: LoCoMo dev7, longterm=locomo,
context=none. ablate.* keys set the ablation: ablate.select=[no_dense,no_feedback],
ablate.resamples=2000, ablate.output_dir=DIR, '+ablate.variants.NAME=["KEY=VALUE",...]';
any other override goes to every run: dataset.sample_ids=[conv-26].
"""


def _ablate(argv: list[str]) -> int:
    from memlab.ablate import run_ablation

    if argv and argv[0] in ("-h", "--help"):
        print(ABLATE_USAGE, end="")
        return 0
    try:
        ablation = run_ablation(argv, progress=lambda line: print(f"memlab: {line}", file=sys.stderr, flush=True))
    except KeyboardInterrupt as e:
        return _interrupted(e, "the ablation was not written")
    print(ablation.markdown, end="")
    print(f"memlab: ablation in {ablation.out_dir} (ablation.md, ablation.csv, ablation.json; runs/)", file=sys.stderr)
    return 0


COMMANDS = {"report": _report, "compare": _compare, "recommend": _recommend, "ablate": _ablate}


def run_help() -> str:
    """`memlab run --help`: the user-facing groups, one line each, and their entries below, from conf/."""
    conf = Path(str(resources.files(CONFIG_MODULE)))  # a folder on disk: installed or editable, never zipped
    defaults: dict[str, str] = {}
    for line in (conf / "config.yaml").read_text(encoding="utf-8").splitlines():
        key, sep, value = line.strip().removeprefix("- ").partition(":")
        if sep and key in GROUP_HELP:
            defaults[key] = value.strip()
    lines = []
    for group, about in GROUP_HELP.items():
        entries = sorted(p.stem for p in (conf / group).glob("*.yaml"))
        marked = [f"{e}*" if e == defaults.get(group) else e for e in entries]
        lines.append(f"  {group:<15} {about}")  # then its entries, wrapped so no line outgrows a terminal
        lines += textwrap.wrap(" | ".join(marked), width=110, initial_indent=" " * 18, subsequent_indent=" " * 18)
    return RUN_USAGE.format(groups="\n".join(lines))


def topic_help(topic: str) -> str:
    """`memlab run --help TOPIC`: the keys of `GROUP=ENTRY` as a run composes it, or of a section (`sim`)."""
    from hydra import compose, initialize_config_module

    from memlab import config_help

    group, sep, entry = topic.partition("=")
    if group == "hooks" and sep:  # hooks are added under their own name: +hooks@hooks.NAME=NAME
        overrides, path = [f"+hooks@hooks.{entry}={entry}"], f"hooks.{entry}"
    else:
        overrides, path = ([topic] if sep else []), group
    config.register()
    with initialize_config_module(CONFIG_MODULE, version_base=None):
        cfg = compose("config", overrides=overrides)
    if not sep and OmegaConf.select(cfg, path, default=_ABSENT) is _ABSENT:  # GROUP=ENTRY composed already
        raise MemlabError(
            f"--help {topic}: {path} is neither a config group nor a key; try a group ({', '.join(GROUP_HELP)}), "
            "GROUP=ENTRY, or a section such as sim (memlab run --help lists the groups and their entries)"
        )
    return config_help.node_help(cfg, path, topic)


def _shell_completion(args: list[str]) -> None:
    """`memlab -sc ...`: a TAB (``query=bash``) is answered by memlab.completion; install and the rest by Hydra.

    Installing (here or after `run`) also writes the key tree a TAB reads (`write_key_tree`), so that keys
    complete from then on.
    """
    if completion.answer(args):
        return
    if _installs_completion(args):
        write_key_tree()
    _hydra(args)
    _run()


def _installs_completion(args: list[str]) -> bool:
    """Whether `args` install shell completion (``-sc install=bash``, also after `run`)."""
    return any(a in ("-sc", "--shell-completion") for a in args) and any(a.startswith("install=") for a in args)


def write_key_tree() -> Path:
    """Write the key tree of `memlab.completion`: the default config's keys and each group entry's own keys.

    An entry's keys are its schema's fields (its ``/schema/...`` defaults) with its YAML on top, put in the
    default config in place of the group's default (no composition per entry: ~0.3 s each); entries of
    ``# @package _global_`` groups and hooks (added under their own names) are left out.
    """
    from hydra import compose, initialize_config_module

    store = config.register()
    with initialize_config_module(CONFIG_MODULE, version_base=None):
        cfg = compose("config", return_hydra_config=True)  # Hydra's completion offers hydra.* keys too
        groups = _hydra_groups()
    entries: dict[str, Any] = {}
    for group in GROUP_HELP:
        for path in sorted((completion.conf_dir() / group).glob("*.yaml")):
            if group == "hooks" or "@package _global_" in path.read_text(encoding="utf-8"):
                continue
            body = OmegaConf.load(path)
            assert isinstance(body, DictConfig)
            node: DictConfig = OmegaConf.create()
            for item in body.pop("defaults", []):
                name, _, at = str(item).partition("@")
                if name.startswith("/schema/"):
                    schema = store.load(f"{name.removeprefix('/')}.yaml").node
                    node = OmegaConf.merge(node, schema if at == "_here_" else {at: schema})  # type: ignore[assignment]
            root = cfg.copy()
            with open_dict(root):
                root[group] = OmegaConf.merge(node, body)
            entries[f"{group}={path.stem}"] = _key_tree(root, root._get_node(group), group)
    out = completion.key_tree_path()
    out.parent.mkdir(parents=True, exist_ok=True)
    tree = {"default": _key_tree(cfg, cfg, ""), "entries": entries, "groups": groups}
    out.write_text(json.dumps(tree, default=str), encoding="utf-8")
    return out


def _hydra_groups() -> dict[str, dict[str, list[str]]]:
    """Hydra's own groups (hydra/launcher, hydra/sweeper, ... with its plugins'): their entries and subgroups."""
    from hydra.core.global_hydra import GlobalHydra

    loader = GlobalHydra.instance().config_loader()
    found, todo = {}, ["hydra"]
    while todo:
        group = todo.pop()
        subgroups = sorted(loader.list_groups(group))
        found[group] = {"entries": sorted(loader.get_group_options(group)), "groups": subgroups}
        todo += [f"{group}/{sub}" for sub in subgroups]
    return found


def _key_tree(root: DictConfig, node: Any, key: str) -> Any:
    """`node` (at `key` of `root`) as plain data, as Hydra's completion shows it: values resolved where they can
    be, an empty (None) list or mapping as an empty one (Hydra offers ``key.`` for it, not ``key=``)."""
    if isinstance(node, DictConfig | ListConfig):
        if node._is_none() or node._is_missing():
            return {} if isinstance(node, DictConfig) else []
        if isinstance(node, ListConfig):
            return [_key_tree(root, node._get_node(i), f"{key}.{i}") for i in range(len(node))]
        return {k: _key_tree(root, node._get_node(k), f"{key}.{k}" if key else k) for k in map(str, node)}
    try:
        return OmegaConf.select(root, key, throw_on_missing=True)
    except Exception:  # missing (???), or a resolver that cannot run outside a run: the value as written
        return node._value() if node is not None else None


def _hydra(args: list[str]) -> None:
    """Hand `args` to the Hydra entry point as `memlab`'s own command line."""
    config.register()
    sys.argv = ["memlab", *args]  # Hydra's completion script registers itself for argv[0]


# What may set `hydra.mode` (a preset sweep: experiment=demo) besides `-m`: an experiment, an optuna search,
# Hydra's own keys, this machine's conf/local/default.yaml, another config (--config-name, --config-dir, ...).
_MODE_SETTERS = ("experiment", "hparams_search", "hydra", "local")


def _about_hydras_flags(error: ValueError) -> bool:
    """Whether `error` is Hydra's refusal of its command line's flags (``-m --cfg job``: one mode at a time).

    Hydra raises those from its entry point before composing anything; a ValueError from anywhere else is a bug.
    """
    return error.__traceback__ is not None and traceback.extract_tb(error.__traceback__)[-1].name == "_run_hydra"


def _known_single_run(args: list[str]) -> bool:
    """Whether `memlab run ARGS` is a single run whatever its config says: no -m and nothing that sets hydra.mode.

    Hydra composes the whole config once only to read ``hydra.mode`` before composing it again for the run
    (~0.15-0.3 CPU s); for such a command line that first composition finds nothing and is skipped.
    Every other group's entries live in their own package (``context: ...``) or, for debug=, are tested not
    to set Hydra's keys (tests/test_startup_imports.py).
    """
    if (completion.conf_dir() / "local" / "default.yaml").exists():
        return False
    for arg in args:
        if arg.startswith("-"):
            return False  # -m, --multirun, --config-*, -cp/-cn/-cd, ...
        key = arg.lstrip("+~").partition("=")[0]
        if key.split("/")[0].split(".")[0].split("@")[0] in _MODE_SETTERS:
            return False
    return True


@contextlib.contextmanager
def _no_mode_probe() -> Iterator[None]:
    """While a known single run starts, Hydra's mode probe answers "not set" without composing (as it would)."""
    from hydra._internal.hydra import Hydra

    probe = Hydra.get_mode
    Hydra.get_mode = lambda self, config_name, overrides: None  # type: ignore[method-assign]
    try:
        yield
    finally:
        Hydra.get_mode = probe  # type: ignore[method-assign]


@contextlib.contextmanager
def _groups_from_one_repository() -> Iterator[None]:
    """While Hydra's help runs, it lists config groups from one copy of the config repository, not one a group.

    Hydra deep-copies every stored config for each of the ~170 groups it lists (tens of seconds);
    the listing only reads the repository, so one copy per (config, overrides) gives the same text.
    Hydra's own method comes back when the block ends.
    """
    from hydra._internal.config_loader_impl import ConfigLoaderImpl

    create = ConfigLoaderImpl._parse_overrides_and_create_caching_repo
    made: dict[tuple[int, str | None, tuple[str, ...]], Any] = {}

    def once(self: ConfigLoaderImpl, config_name: str | None, overrides: list[str]) -> Any:
        key = (id(self), config_name, tuple(overrides))
        if key not in made:
            made[key] = create(self, config_name, overrides)
        return made[key]

    ConfigLoaderImpl._parse_overrides_and_create_caching_repo = once  # type: ignore[method-assign]
    try:
        yield
    finally:
        ConfigLoaderImpl._parse_overrides_and_create_caching_repo = create  # type: ignore[method-assign]


@contextlib.contextmanager
def _jobs_composed_once() -> Iterator[None]:
    """While a sweep runs, a launcher composing in this process takes each job's config from the sweeper's check.

    Hydra's sweeper composes every job of a batch to check it (`Sweeper.validate_batch_is_legal`), drops the
    configs, and the basic launcher composes each job again (`load_sweep_config`): half of a sweep's compose
    time, ~0.14 CPU s a job of the tau-bench peers sweep (docs/speed.md). Here the check keeps what it composed
    and the launcher's call with the same master config and overrides takes it (once): the same call on the
    same files and overrides, only made before the earlier jobs ran instead of after. A launcher in other
    processes (joblib, Ray) composes there as before; each check drops what the last one kept. The check also
    runs `check_keys` on every job's config (`_check_batch`), so a key only some jobs' entries have stops the
    sweep before any of them runs. Hydra's methods come back when the block ends.
    """
    from hydra._internal.config_loader_impl import ConfigLoaderImpl
    from hydra.plugins.sweeper import Sweeper

    check, compose = Sweeper.validate_batch_is_legal, ConfigLoaderImpl.load_sweep_config
    kept: dict[tuple[int, tuple[str, ...]], list[DictConfig]] = {}
    checking: list[list[DictConfig]] = []  # while a check runs: the configs it composed, in the batch's order
    launched = [0]  # jobs of the batches checked before

    def keeping(self: Sweeper, batch: Any) -> None:
        kept.clear()
        checking.append([])
        try:
            check(self, batch)
            _check_batch(batch, checking[-1], launched[0])
        finally:
            checking.pop()
        launched[0] += len(batch)

    def once(self: ConfigLoaderImpl, master_config: DictConfig, sweep_overrides: list[str]) -> DictConfig:
        key = (id(master_config), tuple(sweep_overrides))
        if not checking and kept.get(key):
            return kept[key].pop(0)
        cfg = compose(self, master_config, sweep_overrides)
        if checking:
            kept.setdefault(key, []).append(cfg)
            checking[-1].append(cfg)
        return cfg

    Sweeper.validate_batch_is_legal = keeping  # type: ignore[method-assign]
    ConfigLoaderImpl.load_sweep_config = once  # type: ignore[method-assign]
    try:
        yield
    finally:
        Sweeper.validate_batch_is_legal = check  # type: ignore[method-assign]
        ConfigLoaderImpl.load_sweep_config = compose  # type: ignore[method-assign]


def _check_batch(batch: Sequence[Sequence[str]], configs: Sequence[DictConfig], first: int) -> None:
    """`ConfigKeyProblem` naming the first job of `batch` whose config has a key no schema declares, before any job
    of the batch runs (the launcher runs every job and raises a job's error at the end, after the others published).

    Args:
        batch: Each job's overrides, as the sweeper gives them.
        configs: Each job's config, as the sweeper's check composed it (in the batch's order).
        first: The number of the batch's first job.
    """
    for number, (overrides, cfg) in enumerate(zip(batch, configs, strict=True), start=first):
        try:
            check_keys(cfg)
        except ConfigKeyProblem as e:
            varied = {o for o in overrides if any(o not in other for other in batch)}
            label = " ".join(o for o in overrides if o in varied) or " ".join(overrides)
            ran = "no job was run" if first == 0 else f"jobs {first} on were not run"
            raise ConfigKeyProblem(f"job {number} ({label}): {e}; {ran}") from None


def _discard_interrupted() -> None:
    """After Ctrl-C: the folder Hydra made for the run, if nothing was written to it, and a sweep's stub.

    Ctrl-C inside memlab's task is cleaned up there (`_run`); this covers one that lands in Hydra's
    own setup, after it made the folder and before the task started.
    """
    if OutputFolders.run is not None:
        _discard_if_empty(OutputFolders.run)
    _discard_sweep_stub()


def _left_unwritten() -> str:
    """What a Ctrl-C left unwritten: the run directory; in a sweep with jobs done, the running job (or the comparison,
    written when the sweep ends, as one set: `write_comparison`) and which jobs finished, for `memlab report` to
    compare."""
    from memlab.report.rundata import COMPARISON_HTML
    from memlab.report.sweep import job_numbers, sweep_jobs

    sweep = OutputFolders.sweep
    jobs = sweep_jobs(sweep) if sweep is not None and sweep.is_dir() else None
    if sweep is None or jobs is None or not (jobs.finished or jobs.failed):
        return "the run directory was not published"
    done = job_numbers(sorted([*jobs.finished, *jobs.failed]))
    if not jobs.missing and (sweep / COMPARISON_HTML).is_file():  # the interrupt came once it was written
        return f"{done} finished in {sweep}, and their comparison is written: {sweep / COMPARISON_HTML}"
    unwritten = "the running job was not published" if jobs.missing else "the comparison was not written"
    return f"{unwritten}; {done} finished in {sweep}: memlab report {shlex.quote(str(sweep))} compares them"


class Terminated(KeyboardInterrupt):
    """SIGTERM (`kill`, `timeout`, a CI runner's cancel), raised where Ctrl-C is: the run cleans up as after Ctrl-C,
    leaving no empty run folder and no sweep stub, and `memlab` exits with 143 (Python's default left both)."""


def _terminate(signum: int, frame: object) -> None:
    raise Terminated


def _interrupted(e: KeyboardInterrupt, what: str) -> int:
    """Say what a Ctrl-C or a SIGTERM left unwritten; the exit status (130 or 143, as a shell reports them)."""
    if isinstance(e, Terminated):
        print(f"memlab: terminated (SIGTERM); {what}", file=sys.stderr)
        return 128 + signal.SIGTERM
    print(f"memlab: interrupted; {what}", file=sys.stderr)
    return 130


def main(argv: list[str] | None = None) -> None:
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in ("-h", "--help"):
        print(USAGE, end="")
        return
    if args[0] in ("-V", "--version"):
        print(f"memlab {__version__}")
        return
    command, rest = args[0], args[1:]
    with _sigterm_interrupts() if command in ("run", "ablate") else contextlib.nullcontext():
        _command(command, rest)


@contextlib.contextmanager
def _sigterm_interrupts() -> Iterator[None]:
    """SIGTERM raises `Terminated` while the block runs (in the main thread), as Ctrl-C raises KeyboardInterrupt;
    the handler before is put back after (`main` is called in-process by tests and other programs)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, _terminate)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _command(command: str, rest: list[str]) -> None:
    """`memlab COMMAND REST...`, after `main` answered --help and --version."""
    if command in ("-sc", "--shell-completion"):
        _shell_completion([command, *rest])
        return
    if command == "run" and rest and rest[0] in ("-h", "--help"):
        try:
            print(run_help() if len(rest) == 1 else topic_help(rest[1]), end="")
        except (ConfigCompositionException, OmegaConfBaseException) as e:
            print(f"memlab: error: {explain_error(e)}", file=sys.stderr)
            sys.exit(2)
        except MemlabError as e:
            print(f"memlab: error: {e}", file=sys.stderr)
            sys.exit(2)
        return
    if command == "run":
        if _installs_completion(rest):
            write_key_tree()
        _hydra(rest)
        os.environ.setdefault("HYDRA_FULL_ERROR", "1")  # configuration errors come back here, to be explained
        OutputFolders.forget()
        _forget_last_sweep()
        lists_groups = any(a in ("--hydra-help", "--info", "-i") for a in rest)
        try:
            with (
                _no_mode_probe() if _known_single_run(rest) else contextlib.nullcontext(),
                _groups_from_one_repository() if lists_groups else contextlib.nullcontext(),
                _jobs_composed_once(),
            ):
                _run()
        # HydraException: also a sweeper refusing what it was given (interval() in a basic sweep)
        except (HydraException, OmegaConfBaseException, ConfigKeyProblem) as e:
            _discard_sweep_stub()
            print(f"memlab: error: {explain_error(e, rest)}", file=sys.stderr)
            sys.exit(2)
        except MissingExtraError as e:  # a sweep's logger (`_check_logger`); a single run's is its own error
            _discard_sweep_stub()
            print(f"memlab: error: {e}", file=sys.stderr)
            sys.exit(2)
        except ValueError as e:
            if not _about_hydras_flags(e):
                raise
            print(f"memlab: error: {e}", file=sys.stderr)
            sys.exit(2)
        except KeyboardInterrupt as e:
            _discard_interrupted()
            sys.exit(_interrupted(e, _left_unwritten()))
        sys.exit(_sweep_status())
    if command in COMMANDS:
        try:
            sys.exit(COMMANDS[command](rest))
        except MemlabError as e:
            print(f"memlab: error: {e}", file=sys.stderr)
            sys.exit(2)
        except KeyboardInterrupt as e:  # one line, not a traceback (a comparison is written whole or not at all)
            sys.exit(_interrupted(e, f"memlab {command} did not finish"))
    print(f"memlab: unknown command {command!r}\n{USAGE}", file=sys.stderr, end="")
    sys.exit(2)
