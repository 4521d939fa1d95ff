"""`memlab ablate`: the full long-term pipeline and each variant of it on the same data, in one command.

Settings come from ``conf/ablate.yaml`` (schema `AblateConfig`): `run` holds the overrides of every
run (the full pipeline), `variants` maps a name to the overrides that turn one part off. Every run
goes through `memlab.experiment.run_experiment`, as `memlab run` would run it, into
``<output>/runs/<variant>/``; the table (`memlab.report.ablation`) compares each variant's
per-question scores with the full pipeline's and goes to ``<output>/ablation.{md,csv,json}``.

>>> split_overrides(["ablate.resamples=2000", "dataset.sample_ids=[conv-26]"])
(['resamples=2000'], ['dataset.sample_ids=[conv-26]'])
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import pandas as pd
from hydra.core.config_store import ConfigStore
from omegaconf import DictConfig, ListConfig, OmegaConf

from memlab import ranges
from memlab.api import compose
from memlab.errors import MemlabError, RunFolderBusy
from memlab.experiment import load_dialogues, run_experiment
from memlab.metrics.bootstrap import CONFIDENCE, RESAMPLES
from memlab.naming import folder_token
from memlab.report.ablation import (
    METRICS,
    AblationVariant,
    ablation_files,
    ablation_table,
    check_metrics,
    question_scores,
)
from memlab.rundir import claimed, run_folder

CONFIG_NAME = "ablate"  # conf/ablate.yaml
PREFIX = "ablate."  # command-line overrides of the ablation's own settings; the rest go to every run
BASELINE = "full"


@dataclass
class AblateConfig:
    """`memlab ablate`'s settings (conf/ablate.yaml): the runs to make and how to compare them."""

    name: str = "ablate"
    """The ablation's name: its folder under reports/ablations/ and each run's name prefix."""
    run: list[str] = field(default_factory=list)
    """Overrides of every run, as `memlab run` takes them: the full pipeline."""
    variants: dict[str, list[str]] = field(default_factory=dict)
    """Each variant's name and the overrides (after `run`'s) that make it."""
    stages: str | None = None
    """A list in the run config (``longterm.rerank``): one variant per entry, that stage left out (null: none)."""
    select: list[str] | None = None
    """Run only these variants (null: all of `variants`)."""
    metrics: list[str] = field(default_factory=lambda: list(METRICS))
    """The compared ``longterm.*`` metrics: recall@K and ndcg@10."""
    resamples: int = ranges.ranged(RESAMPLES, ge=1_000)
    """Paired bootstrap draws over the questions."""
    confidence: float = ranges.ranged(CONFIDENCE, gt=0, lt=1)
    """The confidence intervals' coverage."""
    seed: int = ranges.seed(0)
    """The bootstrap's seed (each run keeps its own `seed`)."""
    output_dir: str | None = None
    """Where the ablation is written; None: reports/ablations/<name>/<time>-<token>."""


@dataclass(frozen=True)
class Ablation:
    """A finished ablation: where it was written and its table."""

    out_dir: Path
    table: pd.DataFrame
    markdown: str


def split_overrides(args: Sequence[str]) -> tuple[list[str], list[str]]:
    """The ablation's own overrides (``ablate.KEY=VALUE``, prefix dropped) and every run's (the rest)."""
    own: list[str] = []
    runs: list[str] = []
    for arg in args:
        body = arg.lstrip("+~")  # Hydra's +key / ++key / ~key forms keep their sign
        sign = arg[: len(arg) - len(body)]
        if body.startswith(PREFIX):
            own.append(sign + body.removeprefix(PREFIX))
        else:
            runs.append(arg)
    return own, runs


def _composed(overrides: Sequence[str], config_name: str = "config") -> DictConfig:
    """`memlab.api.compose`; its error names the ablation's own overrides as written (``ablate.`` put back) and,
    for one Hydra cannot parse, how an override inside a variant's list is quoted."""
    try:
        return compose(overrides, config_name=config_name)
    except MemlabError as e:
        text = str(e)
        if config_name == CONFIG_NAME:
            for given in overrides:
                body = given.lstrip("+~")
                text = text.replace(given, f"{given[: len(given) - len(body)]}{PREFIX}{body}")
        if "override_grammar" in text:
            text += """ (an override inside a list is quoted: '+ablate.variants.NAME=["KEY=VALUE"]')"""
        raise MemlabError(text) from None


def ablate_config(overrides: Sequence[str] = ()) -> DictConfig:
    """conf/ablate.yaml with `overrides` (its own keys: ``resamples=2000``), validated."""
    ConfigStore.instance().store(name="ablate_schema", node=AblateConfig)
    cfg = _composed(overrides, CONFIG_NAME)
    ranges.check_config(cfg, prefix="ablate")
    return cfg


def stage_variants(key: str | None, stages: Sequence[str]) -> dict[str, list[str]]:
    """One variant per stage of the list at `key`: ``no_<stage>``, the list without it (``key=[a,c]``)."""
    if key is None:
        return {}
    return {f"no_{stage}": [f"{key}=[{','.join(s for s in stages if s != stage)}]"] for stage in stages}


def plans(cfg: DictConfig, extra: Sequence[str] = (), stages: Sequence[str] = ()) -> dict[str, list[str]]:
    """Each run's overrides, the full pipeline first: `run`, the command line's `extra`, then the variant's.

    The variants are one per entry of `stages` (the full pipeline's list at `cfg.stages`), then `cfg.variants`.
    """
    base = [*cfg.run, *extra]
    variants = {**stage_variants(cfg.stages, stages), **cfg.variants}
    unknown = sorted(set(cfg.select or ()) - set(variants))
    if unknown:
        raise MemlabError(f"ablate.select: no variant {', '.join(unknown)}; variants: {', '.join(variants)}")
    out = {BASELINE: base}
    for name, overrides in variants.items():
        if cfg.select is not None and name not in cfg.select:
            continue
        if name == BASELINE:
            raise MemlabError(f"ablate.variants.{BASELINE}: the name is the full pipeline's; pick another")
        out[str(name)] = [*base, *overrides]
    return out


def compose_runs(cfg: DictConfig, extra: Sequence[str] = ()) -> dict[str, tuple[list[str], DictConfig]]:
    """Every run's overrides and composed config, all checked before the first run starts."""
    base = [*cfg.run, *extra]
    full = _run_config(cfg, BASELINE, base, base)
    if full.sim.stop_after_session or full.sim.resume:
        raise MemlabError("ablate compares whole runs: sim.stop_after_session and sim.resume are for memlab run")
    _check_longterm(full)  # before the variants: their overrides may not apply without long-term memory
    stages: list[str] = []
    if cfg.stages is not None:
        listed = OmegaConf.select(full, cfg.stages)
        if not isinstance(listed, ListConfig):
            raise MemlabError(f"ablate.stages={cfg.stages}: the full pipeline's config has no list there")
        stages = [str(s) for s in listed]
    planned = plans(cfg, extra, stages)
    if len(planned) == 1:
        raise MemlabError("ablate: no variant to compare with the full pipeline (ablate.variants / ablate.select)")
    return {
        variant: (overrides, full if variant == BASELINE else _run_config(cfg, variant, overrides, base))
        for variant, overrides in planned.items()
    }


def _run_config(cfg: DictConfig, variant: str, overrides: list[str], base: list[str]) -> DictConfig:
    """One run's config, named after the ablation and the variant; an override error names the variant."""
    try:
        return _composed([*overrides, f"name={cfg.name}-{variant}"])
    except MemlabError as e:
        own = " ".join(overrides[len(base) :])
        where = f"variant {variant!r} ({own})" if variant != BASELINE else "the full pipeline"
        raise MemlabError(f"ablate {where}: {e}") from None


def _check_longterm(run: DictConfig) -> None:
    """The full pipeline has long-term memory and the data has questions with evidence, or a clear error."""
    target = OmegaConf.select(run, "longterm._target_")
    if run.get("longterm") is None or target == "memlab.runtime.Component":
        raise MemlabError("ablate needs long-term memory: set longterm=<entry> (e.g. longterm=locomo)")
    if not any(p.evidence for d in load_dialogues(run) for p in d.probes):
        raise MemlabError(
            f"ablate: no question with evidence in the data ({run.dataset.get('_target_')}); "
            "long-term retrieval is scored on questions that cite their evidence turns (e.g. dataset=locomo)"
        )


def default_out_dir(cfg: DictConfig) -> Path:
    """reports/ablations/<name>/<time>-<token>, as `memlab run` names its folders."""
    return Path("reports/ablations") / cfg.name / f"{datetime.now():%Y%m%d-%H%M%S}-{folder_token()}"


def run_ablation(overrides: Sequence[str] = (), progress: Callable[[str], None] = lambda line: None) -> Ablation:
    """Run the full pipeline and each variant, then write the table.

    Args:
        overrides: the command line: ``ablate.KEY=VALUE`` for the ablation, the rest for every run.
        progress: receives one line as each run starts and ends.

    Returns:
        The ablation's folder and table.
    """
    own, extra = split_overrides(overrides)
    cfg = ablate_config(own)
    metrics = list(cfg.metrics)
    check_metrics(metrics)  # before any run
    runs = compose_runs(cfg, extra)
    out = run_folder(Path(cfg.output_dir) if cfg.output_dir else default_out_dir(cfg))
    made = not out.exists()
    try:
        with claimed(out):  # a second ablation into this folder meanwhile is refused
            return _run_all(cfg, runs, out, metrics, progress)
    except RunFolderBusy:  # the folder is the other ablation's
        raise
    except BaseException:  # a failed or interrupted ablation leaves no folder of runs without their table
        if made:
            shutil.rmtree(out, ignore_errors=True)
        raise


def _run_all(
    cfg: DictConfig,
    runs: dict[str, tuple[list[str], DictConfig]],
    out: Path,
    metrics: list[str],
    progress: Callable[[str], None],
) -> Ablation:
    """`run_ablation`'s runs and table into `out`."""
    scored: dict[str, AblationVariant] = {}
    for i, (variant, (given, run)) in enumerate(runs.items(), 1):
        changed = given[len(runs[BASELINE][0]) :]
        progress(f"ablate: run {i} of {len(runs)}: {variant}" + (f" ({' '.join(changed)})" if changed else ""))
        result = run_experiment(run, out / "runs" / variant, overrides=given)
        scores = question_scores(result.run_dir, metrics)
        if scores.empty:
            raise MemlabError(
                f"ablate: the {variant} run scored no long-term question (no retrieval recorded for any probe with "
                f"evidence outside {list(run.eval.overall_excludes)}); see {result.run_dir}"
            )
        scored[variant] = AblationVariant(variant, tuple(changed), scores)
        progress(f"ablate: {variant} done: {len(scores)} questions, " + _means(scores))
    baseline, *variants = scored.values()
    table = ablation_table(
        baseline, variants, metrics, resamples=cfg.resamples, confidence=cfg.confidence, seed=cfg.seed
    )
    settings: dict[str, Any] = {
        **OmegaConf.to_container(cfg, resolve=True),  # type: ignore[dict-item]
        "run_overrides": runs[BASELINE][0],
    }
    settings.pop("output_dir", None)
    files = ablation_files(table, settings, metrics)
    out.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (out / name).write_text(text, encoding="utf-8")
    for stale in sorted((out / "runs").iterdir()):  # a reused ablate.output_dir: runs no row of this table is from
        if stale.is_dir() and stale.name not in runs:
            shutil.rmtree(stale)
    return Ablation(out, table, files["ablation.md"])


def _means(scores: pd.DataFrame) -> str:
    return ", ".join(f"{m} {v:.3f}" for m, v in scores.mean().items())
