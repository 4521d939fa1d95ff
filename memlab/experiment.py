"""The library entry point: build a run from its config, replay, measure, publish the run directory.

The CLI only wraps `run_experiment`; tests and notebooks call it directly with a composed config.
"""

from __future__ import annotations

import copy
import cProfile
import hashlib
import io
import json
import logging
import math
import operator
import os
import pstats
import random
import sys
import textwrap
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
from hydra.core.hydra_config import HydraConfig
from hydra.errors import InstantiationException
from hydra.types import RunMode
from hydra.utils import get_class, get_object
from hydra.utils import instantiate as hydra_instantiate
from omegaconf import DictConfig, OmegaConf

from memlab.config_keys import check_keys, typed_nodes
from memlab.context.interceptor import ignored_knobs as context_ignored_knobs
from memlab.dialogues.model import UNIQUE_DIALOGUE_IDS, Dialogue, dropped_evidence
from memlab.errors import MemlabError, RunFolderBusy
from memlab.eval import answer_rows
from memlab.llm import run_wide_models
from memlab.llm.extractive import SUMMARY_MEMO
from memlab.llm.litellm_import import unset_header_variable
from memlab.metrics import all_events, check_tokenizer, mean_by_category, probe_rows, registry
from memlab.metrics.answers import (
    ANSWER_ERROR,
    ANSWER_METRICS,
    JUDGE_ERROR,
    JUDGE_UNPARSED,
    answer_call_metrics,
    answerable,
)
from memlab.metrics.pricing import model_price
from memlab.ranges import check_config
from memlab.rundir import claimed, data_hash, discard_empty, git_state, outermost_missing, publish, run_folder, versions
from memlab.runtime import Component, History, Runtime, SecurityContext
from memlab.sim import (
    CallRecord,
    Cursor,
    ProbeRecord,
    Record,
    ReplayOptions,
    Shared,
    chains,
    simulate,
    simulate_parallel,
    user_ends,
)
from memlab.sim.checkpoint import (
    LOCK_PREFIX,
    Checkpoint,
    check_belongs,
    checkpoint_id,
    checkpoint_lock,
    load_checkpoint,
    save_checkpoint,
)
from memlab.sim.checkpoint import PREFIX as CHECKPOINT_PREFIX
from memlab.sim.progress import NOTICE, PROGRESS_LOGGER, Heartbeat
from memlab.stores import MAX_KEY_LENGTH, InMemoryStore, MemoryRows, SessionStore, close_store, new_scope, scoped
from memlab.stores.scoped import SCOPE_PREFIX
from memlab.tokens import get_counter
from memlab.trace import recording
from memlab.tracking import FinishedRun, RunLogger, now, record_run

T = TypeVar("T")

# Groups whose entry is a runtime `Component` (the plain Component is "none").
COMPONENT_GROUPS = ("context", "memory", "longterm")
PROFILE_LINES = 40  # functions listed in profile.txt (`debug=profile`)
LABEL_CHARS = 100  # a sweep job's name in heartbeat lines: its number and the start of its overrides
# Libraries that log every request at INFO (litellm: ~6 lines per call), and matplotlib, which tells of building
# its font cache on its first use on a machine: warnings only, unless `verbose=true`.
log = logging.getLogger(__name__)
QUIET_LOGGERS = ("LiteLLM", "LiteLLM Router", "LiteLLM Proxy", "litellm", "httpx", "httpcore", "openai", "matplotlib")

# The checkout whose commit (and local changes) a run records in its manifest.
SOURCE = Path(__file__).parent


@dataclass(frozen=True)
class RunResult:
    """A finished run: where it was published and its metrics (what `memlab.run` returns).

    Args:
        run_dir: The run directory, with its reports.
        metrics: Every metric, unrounded (metrics.json holds them rounded).
        records: What the replay recorded, call by call (memlab.sim).
        stopped: Stopped at `sim.stop_after_session`: the store key of the checkpoint saved (no run directory
            published); None for a finished run.
    """

    run_dir: Path
    metrics: dict[str, Any]
    records: list[Record]
    stopped: str | None = None


def instantiate(node: Any, **kwargs: Any) -> Any:
    """`hydra.utils.instantiate`, but a user error raised by the target surfaces as itself."""
    try:
        return hydra_instantiate(node, **kwargs)
    except InstantiationException as e:
        cause = e.__cause__
        while cause is not None and not isinstance(cause, MemlabError):
            cause = cause.__cause__
        if cause is not None:
            raise cause from None
        raise


def build_components(cfg: DictConfig) -> list[Component]:
    """Every configured component (groups first, then hooks), in config order."""
    nodes = [cfg[g] for g in COMPONENT_GROUPS if cfg.get(g) is not None]
    nodes += [cfg.hooks[name] for name in sorted(cfg.hooks) if cfg.hooks[name] is not None]
    built = [instantiate(node) for node in nodes]
    for node, obj in zip(nodes, built, strict=True):
        if not isinstance(obj, Component):
            raise TypeError(
                f"config entry with _target_ {node.get('_target_')!r} built a {type(obj).__name__}, not a Component"
            )
    return built


def check_header_variables(cfg: DictConfig) -> None:
    """Refuse, before anything is read, a variable that a node's `headers_env` names and the environment lacks.

    The model reads it at each call, but may be built only after the replay (`eval.answers`): the run would
    fail after its work, not at its start.
    """
    for path, _, node in typed_nodes(cfg):
        headers = node.get("headers_env") if "headers_env" in node else None
        if isinstance(headers, DictConfig) and (problem := unset_header_variable(path, headers)):
            raise MemlabError(problem)


def ignored_knobs(cfg: DictConfig) -> dict[str, Any]:
    """The sweep knobs (`context.max_tokens`, ...) set for a context strategy that has no such parameter."""
    if cfg.get("context") is None:
        return {}
    ignored = context_ignored_knobs(cfg.context)
    target = OmegaConf.select(cfg, "context.strategy._target_") or cfg.context.get("_target_")
    for key, value in ignored.items():
        log.warning("%s=%s does not apply to %s; ignored", key, value, target)
    return ignored


def run_libraries(cfg: DictConfig) -> list[str]:
    """The distributions the run's configured classes drive (their `libraries`: a peer's library), for the manifest.

    Read from the config rather than the process, so a sweep in one process and replay workers record the same.
    """
    found: set[str] = set()

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            target = node.get("_target_")
            if isinstance(target, str):
                found.update(getattr(get_object(target), "libraries", ()))
            node = list(node.values())
        if isinstance(node, list):
            for child in node:
                walk(child)

    walk(OmegaConf.to_container(cfg, resolve=True))
    return sorted(found)


# The keys with which a dataset entry takes only its first N dialogues: the file loaders' cap, and the
# synthetic generator's count (each of its dialogues has its own random stream, so the first N are the same).
FIRST_DIALOGUES_KEYS = ("max_dialogues", "dialogues")


def load_dialogues(cfg: DictConfig) -> list[Dialogue]:
    """The dataset's dialogues, cut to `sim.max_dialogues` and `sim.max_sessions` when set.

    A dataset entry that can stop after the first N dialogues is told `sim.max_dialogues`, so a tiny run
    (`debug=default`: one dialogue) neither reads nor generates the others.
    """
    limit = cfg.sim.max_dialogues
    early: dict[str, int] = {}
    if limit is not None:
        key = next((k for k in FIRST_DIALOGUES_KEYS if k in cfg.dataset), None)
        if key is not None:
            own = cfg.dataset[key]
            early[key] = limit if own is None else min(own, limit)
    built = instantiate(cfg.dataset, **early)
    if not isinstance(built, Iterable) or isinstance(built, str | bytes | dict):
        raise MemlabError(f"the dataset ({cfg.dataset._target_}) gave {type(built).__name__}; expected Dialogues")
    dialogues = list(built)[:limit]
    wrong = next((d for d in dialogues if not isinstance(d, Dialogue)), None)
    if wrong is not None:
        raise MemlabError(
            f"the dataset ({cfg.dataset._target_}) gave {type(wrong).__name__}; expected memlab.dialogues.Dialogue"
        )
    seen: dict[str, int] = {}
    for i, dialogue in enumerate(dialogues):  # the shipped loaders name the place in the file; a custom one may not
        if dialogue.id in seen:
            raise MemlabError(
                f"the dataset ({cfg.dataset._target_}) gives the dialogue id {dialogue.id!r} twice (at positions "
                f"{seen[dialogue.id] + 1} and {i + 1} of the dialogues it gives, from 1); {UNIQUE_DIALOGUE_IDS}"
            )
        seen[dialogue.id] = i
    if not dialogues:  # a selection that keeps none (dataset.sample_ids=[]): a run of 0 calls measures nothing
        raise MemlabError(f"the dataset ({cfg.dataset._target_}) gives no dialogue to replay with these settings")
    if cfg.sim.max_sessions is not None:
        dialogues = [d.head(cfg.sim.max_sessions) for d in dialogues]
    return dialogues


class _OneLine(logging.Formatter):
    """``memlab: <message>`` (``memlab: WARNING: <message>`` from WARNING up), as memlab's other stderr lines read."""

    def format(self, record: logging.LogRecord) -> str:
        level = f"{record.levelname}: " if record.levelno >= logging.WARNING else ""
        return f"memlab: {level}{record.getMessage()}"


@contextmanager
def _run_log(verbose: bool, heartbeat_on_stderr: bool = False, quiet: bool = False) -> Iterator[io.StringIO]:
    """Collect the run's log lines (for run.log), with third-party loggers at WARNING unless `verbose`.

    The run's own progress and warnings (the `memlab.progress` logger) go to run.log and to stderr,
    one line each: warnings always, `NOTICE` lines unless `quiet` (`sim.progress=false`), heartbeat lines when
    `heartbeat_on_stderr` (no bar is drawn).
    """
    text = io.StringIO()
    handler = logging.StreamHandler(text)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    console = logging.StreamHandler(sys.stderr)
    console.setFormatter(_OneLine())
    console.setLevel(logging.INFO if heartbeat_on_stderr else logging.WARNING if quiet else NOTICE)
    root, progress = logging.getLogger(), logging.getLogger(PROGRESS_LOGGER)
    levels = {name: logging.getLogger(name).level for name in QUIET_LOGGERS}
    previous = root.level
    root.addHandler(handler)
    root.setLevel(min(previous or logging.INFO, logging.INFO))
    progress.addHandler(handler)
    progress.addHandler(console)
    for name in QUIET_LOGGERS:
        logging.getLogger(name).setLevel(logging.INFO if verbose else logging.WARNING)
    try:
        yield text
    finally:
        root.removeHandler(handler)
        progress.removeHandler(handler)
        progress.removeHandler(console)
        root.setLevel(previous)
        for name, level in levels.items():
            logging.getLogger(name).setLevel(level)


@contextmanager
def _profiled(enabled: bool) -> Iterator[io.StringIO | None]:
    """cProfile the block when `enabled`; the text holds its costliest functions by cumulative time."""
    if not enabled:
        yield None
        return
    profiler, text = cProfile.Profile(), io.StringIO()
    profiler.enable()
    try:
        yield text
    finally:
        profiler.disable()
        pstats.Stats(profiler, stream=text).sort_stats("cumulative").print_stats(PROFILE_LINES)


def _shows_bar(enabled: bool | None) -> bool:
    """`sim.progress`, or by default: a bar on a terminal, none in CI (a heartbeat line instead)."""
    return enabled if enabled is not None else (sys.stderr.isatty() and not os.environ.get("CI"))


def _progress(items: Iterable[T], enabled: bool | None, desc: str = "replay", total: int | None = None) -> Iterable[T]:
    if not _shows_bar(enabled):
        return items
    from tqdm import tqdm

    return tqdm(items, desc=desc, unit="dialogue", leave=False, total=total)


def objective_value(metrics: dict[str, Any], objective: DictConfig | dict[str, Any]) -> float:
    """The number a sweeper optimizes: `objective.metric`, minus the share by which it exceeds `budget`.

    Over budget by 20% costs 0.2, so a sweeper maximizing it trades recall against tokens; a
    metric that is missing or undefined (None) gives NaN, which optuna records as a failed trial.
    """
    value = metrics.get(objective["metric"])
    if value is None:
        return math.nan
    budget = objective.get("budget")
    if budget:
        used = float(metrics.get(objective["budget_metric"]) or 0.0)
        return float(value) - max(0.0, used / float(budget) - 1.0)
    return float(value)


def _answer_evaluation(cfg: DictConfig, rows: list[dict[str, Any]], contexts: Iterable[str]) -> dict[str, Any]:
    """Answer every probe with `cfg.llm` and score it; adds columns to `rows`, returns the means."""
    if cfg.llm is None:
        raise MemlabError("eval.answers=true needs an llm (set llm=<entry>, e.g. llm=litellm)")
    from memlab.report.health import (  # the report code, after the replay
        failed_call_warnings,
        retried_call_warnings,
        unparsed_judge_warnings,
        unpriced_warnings,
    )

    model = instantiate(cfg.llm)
    with recording() as events:  # the calls' LLM_CALL events: what they cost, and why one failed
        scored = answer_rows(
            model, rows, contexts, judge=cfg.eval.judge, language=cfg.eval.language, max_tokens=cfg.eval.max_tokens
        )
    for row, extra in zip(rows, scored, strict=True):
        row.update(extra)
    metrics = mean_by_category(rows, ANSWER_METRICS)
    asked = [r for r in rows if answerable(r)]
    metrics["answer.questions"] = len(asked)
    judge_failures = sum(1 for r in asked if r.get(JUDGE_ERROR))
    metrics["answer.failures"] = sum(1 for r in asked if r.get(ANSWER_ERROR)) + judge_failures
    metrics["answer.judge.failures"] = judge_failures
    metrics["answer.judge.unparsed"] = sum(1 for r in asked if r.get(JUDGE_UNPARSED) is not None)
    # Answered, with no text; the offline baseline's empty answer is its abstention (`empty_answer_abstains`).
    empty = 0 if getattr(model, "empty_answer_abstains", False) else sum(1 for r in asked if r.get("generated") == "")
    metrics["answer.empty"] = empty
    metrics.update(answer_call_metrics(events, model_price(cfg.pricing.model)))
    warnings = [
        *failed_call_warnings(events, "answer and judge calls", "answer.failures"),
        *retried_call_warnings(events, "answer and judge calls", "answer.retries"),
        *unparsed_judge_warnings(metrics),
    ]
    for warning in [*warnings, *unpriced_warnings(events, cfg.pricing.model, "answer.cost_usd")]:
        logging.getLogger(PROGRESS_LOGGER).warning(warning)  # on stderr and in run.log
    return metrics


@dataclass(frozen=True)
class Runtimes:
    """A fresh `Runtime` per dialogue (call it with the dialogue) over components built once.

    A context manager: leaving it closes the components (`Component.close`) and the histories' store, however
    the replay ended, so that a sweep's later runs in this process do not hold this one's pooled connections.

    Args:
        make: Builds the runtime of one dialogue.
        components: The components every runtime shares.
        store: The store the histories live in (None: none to close).
    """

    make: Callable[[Dialogue], Runtime]
    components: Sequence[Component]
    store: Any = None

    def __call__(self, dialogue: Dialogue) -> Runtime:
        return self.make(dialogue)

    def close(self) -> None:
        """Close every component, then the histories' store."""
        for c in self.components:
            c.close()
        close_store(self.store)

    def __enter__(self) -> Runtimes:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def runtime_factory(
    cfg: DictConfig, components: Sequence[Component] | None = None, resumed: str | None = None
) -> Runtimes:
    """A fresh `Runtime` per dialogue, over components built once from `cfg` (and the run's seed set).

    `components` reuses ones already built; the dialogue `resumed` keeps what its history holds.
    """
    random.seed(cfg.seed)
    np.random.seed(cfg.seed)
    check_tokenizer(cfg.tokenizer, cfg.pricing.model)
    counter = get_counter(cfg.tokenizer)
    parts = list(components) if components is not None else build_components(cfg)
    history_factory: Callable[..., History] = instantiate(cfg.agent_memory)
    policy = instantiate(cfg.policy) if cfg.get("policy") is not None else None

    def make_runtime(d: Dialogue) -> Runtime:
        return Runtime(
            history=history_factory(d.id, fresh=False) if d.id == resumed else history_factory(d.id),
            counter=counter,
            security=SecurityContext(user_id=d.user_id, agent_id=cfg.agent_id),
            components=parts,
            system_prompt=d.system_prompt if d.system_prompt is not None else cfg.system_prompt,
            policy=policy,
            max_tool_rounds=cfg.sim.max_tool_rounds,
        )

    # `agent_memory` entries are partials of a history class over `store: ${store}`, built once here.
    return Runtimes(make_runtime, parts, getattr(history_factory, "keywords", {}).get("store"))


def replay_workers(cfg: DictConfig, apart: int, run_wide: Sequence[object] = ()) -> int:
    """`sim.workers`, or the machine's cores, never more than `apart`: the replay's groups of dialogues that can
    replay apart (`memlab.sim.chains`: one per dialogue, or per user when long-term memory ties a user's).

    One process when the run's models keep state across dialogues (llm=faulty's random sequence, one per model): `llm`
    names one, or `run_wide` holds the ones the components built (a faulty model under context.strategy.llm,
    say), since workers would each draw from their own copy in the order the pool hands out dialogues.
    """
    workers = cfg.sim.get("workers")
    if workers is not None and (isinstance(workers, bool) or not isinstance(workers, int) or workers < 1):
        raise MemlabError(f"sim.workers={workers!r}; expected an integer >= 1, or null for the machine's cores")
    target = OmegaConf.select(cfg, "llm._target_")
    if target and getattr(get_class(target), "run_wide_state", False):
        stateful = f"llm={target}"
    elif run_wide:
        stateful = f"a component's model ({', '.join(sorted({type(m).__name__ for m in run_wide}))})"
    else:
        return max(1, min(workers or os.cpu_count() or 1, apart))
    if workers not in (None, 1):
        raise MemlabError(f"sim.workers={workers}: {stateful} keeps state across dialogues; use sim.workers=1")
    return 1


def replay(cfg: DictConfig, dialogues: list[Dialogue], beat: Heartbeat | None = None) -> list[Record]:
    """Every dialogue's records in dialogue order, replayed in `replay_workers` processes (counted in `beat`)."""
    with run_wide_models() as run_wide:  # built here too, so that a bad config fails before any worker starts
        make_runtime = runtime_factory(cfg)
    options = ReplayOptions(call_roles=tuple(cfg.sim.call_roles), probe_context=cfg.sim.probe_context)
    # A user's dialogues see what the earlier ones left (long-term memory): one worker replays them in order.
    by_user = operator.attrgetter("user_id") if any(c.keeps_user_state for c in make_runtime.components) else None
    groups = chains(dialogues, by_user)
    workers = replay_workers(cfg, len(groups), run_wide)
    beat = beat or Heartbeat(cfg.name, None)
    beat.replaying()
    if workers == 1:
        progress = _progress(dialogues, cfg.sim.progress, f"replay {cfg.name}")
        with make_runtime:
            return list(beat.count(simulate(progress, make_runtime, options, ends=user_ends(dialogues))))
    make_runtime.close()  # each worker builds its own
    # Summaries the workers compute come back, so the next job of a sweep in this process reuses them.
    memo = Shared(SUMMARY_MEMO.take_new, SUMMARY_MEMO.add)
    per_dialogue = simulate_parallel(dialogues, runtime_factory, cfg, workers, options, memo, beat.done, groups=groups)
    try:
        return list(
            beat.count(
                (
                    r
                    for records in _progress(per_dialogue, cfg.sim.progress, f"replay {cfg.name}", len(dialogues))
                    for r in records
                ),
                tally=False,  # the workers tallied them
            )
        )
    finally:  # done or interrupted (Ctrl-C): the workers stopped first (the generator's own `finally`), then
        per_dialogue.close()  # the store's files made whole, none of the workers' connections left to keep them
        settle = getattr(make_runtime.store, "settle", None)
        if settle is not None:
            settle()


def run_scope(cfg: DictConfig) -> str | None:
    """A new scope for the run's state in its store; None for `sim.reuse_store=true` or a store in this process.

    `sim.reuse_store=true` on a store in this process is a `MemlabError`: no earlier run left anything there
    (the run said it read what earlier runs left, and its manifest named that state).
    """
    target = OmegaConf.select(cfg, "store._target_")
    built = get_object(target) if target is not None else None
    in_process = built is None or (isinstance(built, type) and issubclass(built, InMemoryStore))
    if cfg.sim.reuse_store and in_process:
        raise MemlabError(
            "sim.reuse_store=true: the store lives in this run's process, so no earlier run left anything in it; "
            "reuse a store that outlives the run (store=sqlite store.path=/absolute/file.sqlite, postgres, mysql, "
            "redis)"
        )
    return None if cfg.sim.reuse_store or in_process else new_scope()


def _tell_scope(label: str, scope: str | None) -> None:
    """Name the run's scope before it writes a row, on stderr and in run.log: a run killed part way (kill -9) leaves
    its rows under it, and publishes no manifest to name it."""
    if scope is not None:
        logging.getLogger(PROGRESS_LOGGER).log(
            NOTICE,
            f"{label}: writes to the store under scope {scope} (a run that does not finish leaves its rows there: "
            f"docs/memory.md, Runs on a shared store)",
        )


def scoped_config(cfg: DictConfig, scope: str | None) -> DictConfig:
    """`cfg` with its store seen from `scope` (`memlab.stores.scoped`), so every ``${store}`` keeps to it."""
    if scope is None:
        return cfg
    run = copy.deepcopy(cfg)
    run.store = {"_target_": "memlab.stores.scoped", "store": run.store, "scope": scope}
    return run


def store_manifest(cfg: DictConfig, scope: str | None, checkpoint: str, *, warm: bool) -> dict[str, Any]:
    """The manifest's `store`: the scope the run kept to, and the earlier state it read on purpose (None: none).

    `warm`: the store held something when a `sim.reuse_store=true` run started (`store_holds_anything`).
    """
    earlier = None
    if cfg.sim.resume:
        earlier = f"sim.resume=true: its scope as checkpoint {checkpoint_id(checkpoint)!r} saved it"
    elif cfg.sim.reuse_store and warm:
        earlier = "sim.reuse_store=true: the store's shared rows, as earlier runs left them"
    return {"scope": scope, "earlier_state": earlier}


def store_holds_anything(cfg: DictConfig) -> bool:
    """Whether the run's store holds what a warm run reads: a session or namespace outside every run's scope.

    Other runs' scopes and checkpoints do not count: a `sim.reuse_store=true` run reads neither.
    """
    store = instantiate(cfg.store)
    theirs = (SCOPE_PREFIX, CHECKPOINT_PREFIX, LOCK_PREFIX)
    try:
        if any(not session.startswith(theirs) for session in store.sessions()):
            return True
        namespaces = store.memory_namespaces() if isinstance(store, MemoryRows) else []
        return any(not ns[0].startswith(SCOPE_PREFIX) for ns in namespaces)
    finally:
        close_store(store)


# What may differ between the command that stopped a run and the one that resumes it. Every other key of the
# resolved config is the checkpoint's fingerprint: a resume whose fingerprint differs would publish a mix of two
# runs, so it is refused.
RESUME_FREE_KEYS = (
    "sim.resume",  # what tells the resuming command from the stopping one
    "sim.stop_after_session",  # a resume may stop again, later (or not at all)
    "sim.progress",  # a bar on screen
    "sim.heartbeat_seconds",  # how often a line on screen and in run.log says how far the replay is
    "verbose",  # third-party log lines in run.log
    "profile",  # profile.txt: where this process spent its time, not what it replayed
    "report",  # how the report is drawn (report.plots: figures) from the same records
    "sim.workers",  # a stopped or resumed replay runs in one process, whatever it says
    "output_dir",  # where the resumed run publishes (the stop publishes nothing)
    # The checkpoint was found in this store, so it is the store the stop wrote, however the resume spells it:
    # a relative store.path resumes as the absolute path the stop line names (store.run_dir is output_dir).
    "store",
    "logger",  # where the finished run is recorded, after the replay
    # Read from the finished records, after the replay (none is interpolated into a setting the replay reads):
    "eval",  # answers generated and scored from the probes' recorded requests (eval.answers=true needs an llm)
    "objective",  # what a sweeper reads from the finished metrics
    "strict",  # whether a run that measured nothing fails, judged from its metrics
    "tags",  # labels in the manifest
    "context_window",  # the window budget.violations counts the recorded prompts against
)


def resume_fingerprint(cfg: DictConfig) -> dict[str, Any]:
    """The resolved config but for `RESUME_FREE_KEYS`, as dotted key: value (what a checkpoint belongs to).

    The free keys are emptied before resolving, so a value drawn from one of them (``${store}``) is empty too.
    """
    plain = OmegaConf.create(OmegaConf.to_container(cfg, resolve=False))  # untyped: a free key may be emptied
    for key in RESUME_FREE_KEYS:
        OmegaConf.update(plain, key, None, force_add=True)
    flat: dict[str, Any] = {}

    def walk(node: Any, prefix: str) -> None:
        if isinstance(node, dict) and node:
            for key, child in node.items():
                walk(child, f"{prefix}{key}.")
        else:
            flat[prefix.removesuffix(".")] = node

    walk(OmegaConf.to_container(plain, resolve=True), "")
    for key in RESUME_FREE_KEYS:
        flat.pop(key, None)
    return flat


def checkpoint_name(cfg: DictConfig, overrides: Sequence[str]) -> str:
    """The name a run's checkpoint is saved under: `name`, and for a sweep's job its overrides but the free ones.

    Every job of a sweep has the sweep's name; the overrides tell them apart, the same in the stopping and the
    resuming sweep (`sim.stop_after_session` and `sim.resume` are left out). Too long a key is hashed.
    """
    if not _sweep_job():
        return str(cfg.name)
    own = sorted(o for o in overrides if not _free(o.lstrip("+~").split("=", 1)[0].split("@", 1)[0]))
    name = f"{cfg.name}[{' '.join(own)}]"
    if len(checkpoint_id(name)) > MAX_KEY_LENGTH:
        name = f"{cfg.name}[sha256:{hashlib.sha256(' '.join(own).encode()).hexdigest()[:16]}]"
    return name


def _free(key: str) -> bool:
    """Whether config key `key` is, or is under, one of `RESUME_FREE_KEYS`."""
    return any(key == free or key.startswith(free + ".") for free in RESUME_FREE_KEYS)


def _sweep_job() -> bool:
    """Whether this process runs a job of a sweep (Hydra's multirun)."""
    return HydraConfig.initialized() and HydraConfig.get().mode == RunMode.MULTIRUN


def replay_checkpointed(
    cfg: DictConfig, dialogues: list[Dialogue], beat: Heartbeat | None = None, name: str | None = None
) -> tuple[list[Record], bool, str | None]:
    """One process, from the checkpoint `name` (default: `cfg.name`) in `cfg.store` (`sim.resume`), up to
    `sim.stop_after_session`.

    The run keeps to a scope of its own; a checkpoint carries what the scope held and a resume restores
    the scope to it first, so an attempt killed part way leaves nothing the next one reads (exactly once).
    A checkpoint of another config or other data is refused before anything is restored.
    Returns the records, whether the replay stopped (its checkpoint then replaces the old one) and the scope.
    """
    store: SessionStore = instantiate(cfg.store)
    try:
        return _replay_checkpointed(cfg, dialogues, beat, store, name or str(cfg.name))
    finally:
        close_store(store)


def _replay_checkpointed(
    cfg: DictConfig, dialogues: list[Dialogue], beat: Heartbeat | None, store: SessionStore, name: str
) -> tuple[list[Record], bool, str | None]:
    """`replay_checkpointed` on `store`, the one its checkpoints live in."""
    if isinstance(store, InMemoryStore):
        raise MemlabError("sim.stop_after_session and sim.resume need a store that outlives the process (store=sqlite)")
    if cfg.sim.reuse_store:
        raise MemlabError(
            "sim.reuse_store=true cannot be combined with sim.stop_after_session or sim.resume: a resume restores "
            "the run's own scope, and a warm store is shared with other runs"
        )
    random.seed(cfg.seed)
    np.random.seed(cfg.seed)
    fingerprint, data = resume_fingerprint(cfg), data_hash(dialogues)
    checkpoint = load_checkpoint(store, name) if cfg.sim.resume else None
    if checkpoint is not None:
        check_belongs(checkpoint, name, fingerprint, data)  # before the store is touched
        done, stop = checkpoint.cursor.sessions_done, cfg.sim.stop_after_session
        if stop and stop <= done:  # it would run to the end without a word: the stop is behind it
            raise MemlabError(
                f"sim.stop_after_session={stop}: the checkpoint is already {done} sessions in; stop later "
                f"(sim.stop_after_session > {done}) or leave it out to run to the end"
            )
    with checkpoint_lock(store, name):  # one replay of a checkpoint at a time, to its end
        return _replay_from(cfg, dialogues, beat, store, name, checkpoint, fingerprint, data)


def _replay_from(
    cfg: DictConfig,
    dialogues: list[Dialogue],
    beat: Heartbeat | None,
    store: SessionStore,
    name: str,
    checkpoint: Checkpoint | None,
    fingerprint: dict[str, Any],
    data: str,
) -> tuple[list[Record], bool, str | None]:
    """`_replay_checkpointed` from `checkpoint` (None: from the start), its lock held."""
    cursor, records, scope = Cursor(), [], new_scope()
    if checkpoint is not None:
        records, cursor = list(checkpoint.records), replace(checkpoint.cursor, stopped=False)
        scope = checkpoint.scope
        scoped(store, scope).restore(checkpoint.stored)
    _tell_scope(beat.label if beat else str(cfg.name), scope)
    run_cfg = scoped_config(cfg, scope)
    resumed = dialogues[cursor.dialogue].id if cursor.resuming else None
    with run_wide_models() as models:  # the models a checkpoint carries the state of (llm=faulty's random draws)
        components = build_components(run_cfg)
        runtimes = runtime_factory(run_cfg, components, resumed)
    with runtimes as make_runtime:  # closes the components at the end
        if checkpoint is not None:
            for component, state in zip(components, checkpoint.states, strict=True):
                component.restore(state)
            for model, state in zip(models, checkpoint.models, strict=True):
                model.restore(state)
        options = ReplayOptions(call_roles=tuple(cfg.sim.call_roles), probe_context=cfg.sim.probe_context)
        progress = _progress(dialogues, cfg.sim.progress, f"replay {cfg.name}")
        beat = beat or Heartbeat(cfg.name, None)
        if cfg.sim.stop_after_session:  # this replay's end, which its time left is of
            beat.sessions = min(beat.sessions, cfg.sim.stop_after_session)
        beat.replaying(cursor.dialogue, cursor.sessions_done)
        ends = user_ends(dialogues)
        records += beat.count(simulate(progress, make_runtime, options, cursor, cfg.sim.stop_after_session, ends))
        if cursor.stopped:
            states = tuple(c.checkpoint() for c in components)  # first: it finishes background writes
            stored = scoped(store, scope).snapshot()
            kept = tuple(m.checkpoint() for m in models)
            save_checkpoint(
                store, name, Checkpoint(tuple(records), cursor, states, scope, stored, kept, fingerprint, data)
            )
    return records, cursor.stopped, scope


def run_experiment(cfg: DictConfig, run_dir: Path | str, *, overrides: Sequence[str] = ()) -> RunResult:
    """Replay `cfg.dataset` through the configured runtime and publish the run directory.

    `overrides` (the command line's, when the CLI calls) are kept in the manifest so that a
    comparison can label each run of a sweep by what differs.
    """
    check_keys(cfg)
    check_config(cfg)  # before anything is read or written
    check_header_variables(cfg)
    made = outermost_missing(Path(run_dir))
    run_dir = run_folder(run_dir)  # a place the run cannot publish in fails now, not after the replay
    try:
        with claimed(run_dir):  # another run into this folder meanwhile is refused, at its start
            get_counter(cfg.tokenizer)  # an unknown tokenizer fails before the dataset is read
            beat = Heartbeat(_run_label(cfg, overrides), cfg.sim.heartbeat_seconds)
            on_stderr = cfg.sim.progress is None and not _shows_bar(None)  # where no bar is drawn, unless quiet
            quiet = cfg.sim.progress is False
            with _run_log(cfg.verbose, heartbeat_on_stderr=on_stderr, quiet=quiet) as log_text, beat:
                result = _replay_and_publish(cfg, run_dir, overrides, log_text, beat)
        if result.stopped and made is not None:  # a checkpoint, nothing published: no folder is left for it
            discard_empty(run_dir, made)
        return result
    except RunFolderBusy:  # the folder is the other run's: not this one's to discard
        raise
    except BaseException:  # nothing published: the folders made for it go too, if still empty
        if made is not None:
            discard_empty(run_dir, made)
        raise


def _run_label(cfg: DictConfig, overrides: Sequence[str]) -> str:
    """How heartbeat lines name the run: a sweep's job number and what it sets, else the run's name."""
    if HydraConfig.initialized() and HydraConfig.get().mode == RunMode.MULTIRUN:
        job = f"job {HydraConfig.get().job.num}"
        # the overrides are cut, not the label: its closing parenthesis stays
        return f"{job} ({textwrap.shorten(' '.join(overrides), LABEL_CHARS - len(job) - 3)})"
    return f"run {cfg.name}"


def _replay_and_publish(
    cfg: DictConfig, run_dir: Path, overrides: Sequence[str], log_text: io.StringIO, beat: Heartbeat
) -> RunResult:
    """`run_experiment`'s work, inside its log and its heartbeat."""
    logger: RunLogger = instantiate(cfg.logger) if cfg.get("logger") is not None else RunLogger()
    random.seed(cfg.seed)
    np.random.seed(cfg.seed)
    dialogues = load_dialogues(cfg)
    evidence_dropped, dropped_warning = dropped_evidence(dialogues)
    if dropped_warning:
        logging.getLogger(PROGRESS_LOGGER).warning(dropped_warning)  # on stderr and in run.log
    checkpoint = checkpoint_name(cfg, overrides)
    beat.dialogues, beat.sessions = len(dialogues), sum(len(d.sessions) for d in dialogues)
    beat.phase = "building the strategies"
    with _profiled(cfg.profile) as profile:
        ignored = ignored_knobs(cfg)
        scope: str | None
        warm = False  # a warm store (sim.reuse_store=true) that held something before the run
        if cfg.sim.resume or cfg.sim.stop_after_session:
            records, stopped, scope = replay_checkpointed(cfg, dialogues, beat, checkpoint)
            if stopped:  # a checkpoint, not a finished run: nothing is published
                calls = sum(isinstance(r, CallRecord) for r in records)
                return RunResult(Path(run_dir), {"calls": calls}, records, checkpoint_id(checkpoint))
        else:
            scope = run_scope(cfg)
            _tell_scope(beat.label, scope)
            warm = cfg.sim.reuse_store and store_holds_anything(cfg)
            records = replay(scoped_config(cfg, scope), dialogues, beat)
    beat.phase = "measuring"
    # Here, not at import: the report code loads pandas and matplotlib (~0.5 s): after the replay,
    # when the run is measured and written (`import memlab.experiment` no longer loads them).
    from memlab.report import RunData, questions_table, run_files
    from memlab.report.health import (
        empty_request_warnings,
        failed_call_warnings,
        fallback_warnings,
        measurement_warnings,
        retried_call_warnings,
        unanswered_warnings,
        unpriced_warnings,
    )
    from memlab.report.rundata import METRICS_FILE, RESULT_FILES

    manifest = {
        "name": cfg.name,
        "tags": list(cfg.tags),
        "seed": cfg.seed,
        "overrides": list(overrides),
        "ignored": ignored,
        "store": store_manifest(cfg, scope, checkpoint, warm=warm),
        "data_sha256": data_hash(dialogues),
        "dialogues": len(dialogues),
        "evidence_dropped": evidence_dropped,  # ids the loader dropped from the replayed questions' evidence
        **git_state(SOURCE),
        "versions": versions(run_libraries(cfg)),
    }
    run = RunData.from_records(
        Path(run_dir),
        records,
        pricing_model=cfg.pricing.model,
        context_window=cfg.context_window,
        manifest=manifest,
        config=OmegaConf.to_container(cfg, resolve=True),  # type: ignore[arg-type]
        overall_excludes=tuple(cfg.eval.overall_excludes),
    )
    if cfg.eval.answers:
        beat.phase = "answering"
        rows = probe_rows(records)
        contexts = (r.context_text for r in records if isinstance(r, ProbeRecord))  # one request's text at a time
        run.metrics.update(_answer_evaluation(cfg, rows, contexts))
        run.questions = questions_table(rows)
    # metrics.json consumers read each metric's unit and direction here (memlab.metrics.registry).
    run.manifest["metric_definitions"] = registry.describe(run.all_metrics())
    events = list(all_events(records))
    warnings = measurement_warnings(run.metrics)
    nothing = [f"this run measured nothing here: {w} (see {Path(run_dir) / 'report.md'})" for w in warnings]
    for warning in [
        *failed_call_warnings(events),
        *retried_call_warnings(events),
        *unpriced_warnings(events, cfg.pricing.model, "cost.usd"),
        *fallback_warnings(run.metrics),
        *empty_request_warnings(events),
        *unanswered_warnings(run.metrics),
        *nothing,
    ]:
        logging.getLogger(PROGRESS_LOGGER).warning(warning)  # on stderr and in run.log, which is written next
    beat.phase = "writing reports"
    files = {**run_files(run), "config.yaml": OmegaConf.to_yaml(cfg, resolve=True)}
    files["run.log"] = log_text.getvalue()
    if profile is not None:
        files["profile.txt"] = profile.getvalue()
    out = publish(Path(run_dir), files, replace=RESULT_FILES)
    metrics = json.loads(files[METRICS_FILE])  # what metrics.json holds, rounded as there
    record_run(
        logger, FinishedRun(out, cfg.name, now(), tuple(overrides), metrics, run.config, run.manifest, tuple(files))
    )
    if warnings and cfg.strict:
        raise MemlabError(f"strict=true and the run measured nothing: {warnings[0]} ({out})")
    return RunResult(out, run.metrics, records)
