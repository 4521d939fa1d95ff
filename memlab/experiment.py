"""The library entry point: build a run from its config, replay, measure, publish the run directory.

The CLI only wraps `run_experiment`; tests and notebooks call it directly with a composed config.
"""

from __future__ import annotations

import io
import os
import random
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from hydra.errors import InstantiationException
from hydra.utils import instantiate as hydra_instantiate
from omegaconf import DictConfig, OmegaConf

from memlab.dialogues.model import Dialogue
from memlab.errors import MemlabError
from memlab.metrics import compute_metrics
from memlab.rundir import canonical_json, data_hash, git_revision, publish, versions
from memlab.runtime import Component, History, Runtime, SecurityContext
from memlab.sim import CallRecord, Record, ReplayOptions, simulate
from memlab.tokens import get_counter

# Groups whose entry is a runtime `Component` (the plain Component is "none").
COMPONENT_GROUPS = ("context", "memory", "longterm")


@dataclass(frozen=True)
class RunResult:
    """A finished run: where it was published and its metrics."""

    run_dir: Path
    metrics: dict[str, Any]
    records: list[Record]


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


def load_dialogues(cfg: DictConfig) -> list[Dialogue]:
    dialogues = instantiate(cfg.dataset)
    return list(dialogues)


def calls_table(records: Sequence[Record]) -> pd.DataFrame:
    """One row per simulated LLM call."""
    rows = [
        {
            "dialogue": r.dialogue_id,
            "session": r.session_id,
            "turn": r.turn,
            "message_id": r.message_id,
            "messages_in": r.messages_in,
            "messages_kept": r.messages_kept,
            "prompt_tokens": r.prompt_tokens,
            "full_tokens": r.full_tokens,
        }
        for r in records
        if isinstance(r, CallRecord)
    ]
    return pd.DataFrame(
        rows,
        columns=[
            "dialogue",
            "session",
            "turn",
            "message_id",
            "messages_in",
            "messages_kept",
            "prompt_tokens",
            "full_tokens",
        ],
    )


def _progress(items: list[Dialogue], enabled: bool | None) -> Any:
    show = enabled if enabled is not None else (sys.stderr.isatty() and not os.environ.get("CI"))
    if not show:
        return items
    from tqdm import tqdm

    return tqdm(items, desc="replay", unit="dialogue")


def run_experiment(cfg: DictConfig, run_dir: Path | str) -> RunResult:
    """Replay `cfg.dataset` through the configured runtime and publish the run directory."""
    random.seed(cfg.seed)
    np.random.seed(cfg.seed)
    dialogues = load_dialogues(cfg)
    counter = get_counter(cfg.tokenizer)
    components = build_components(cfg)
    history_factory: Callable[[str], History] = instantiate(cfg.agent_memory)
    options = ReplayOptions(call_roles=tuple(cfg.sim.call_roles), probe_context=cfg.sim.probe_context)

    def make_runtime(d: Dialogue) -> Runtime:
        return Runtime(
            history=history_factory(d.id),
            counter=counter,
            security=SecurityContext(user_id=d.user_id, agent_id=cfg.agent_id),
            components=components,
            system_prompt=d.system_prompt if d.system_prompt is not None else cfg.system_prompt,
        )

    records = list(simulate(_progress(dialogues, cfg.sim.progress), make_runtime, options))
    metrics = compute_metrics(records)
    calls_csv = io.StringIO()
    calls_table(records).to_csv(calls_csv, index=False)
    manifest = {
        "name": cfg.name,
        "seed": cfg.seed,
        "data_sha256": data_hash(dialogues),
        "dialogues": len(dialogues),
        "git_revision": git_revision(Path(__file__).parent),
        "versions": versions(),
    }
    out = publish(
        Path(run_dir),
        {
            "metrics.json": canonical_json(metrics),
            "calls.csv": calls_csv.getvalue(),
            "config.yaml": OmegaConf.to_yaml(cfg, resolve=True),
            "manifest.json": canonical_json(manifest),
        },
    )
    return RunResult(out, metrics, records)
