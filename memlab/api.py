"""The Python API: compose a validated config from overrides, run it, get the metrics back.

>>> cfg = compose(["context=sliding_window", "context.max_tokens=2000"])
>>> cfg.context.strategy.max_tokens
2000
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from omegaconf import DictConfig

if TYPE_CHECKING:
    from memlab.experiment import RunResult


def compose(overrides: Sequence[str] = (), config_name: str = "config") -> DictConfig:
    """The config `memlab run OVERRIDES` would run, validated.

    A wrong override raises `MemlabError` with the line the command line prints (an unknown key
    with the node's keys and "did you mean", a missing entry with the entries there are).

    Args:
        overrides: Hydra overrides, as on the command line (``["context=trim", "seed=3"]``).
        config_name: The top-level config of memlab.conf to start from.

    Returns:
        The composed config, its keys checked against the schemas.
    """
    from hydra import compose as hydra_compose
    from hydra import initialize_config_module
    from hydra.errors import ConfigCompositionException
    from omegaconf.errors import OmegaConfBaseException

    from memlab import config
    from memlab.config_keys import check_keys, explain_error
    from memlab.errors import MemlabError

    config.register()
    try:
        with initialize_config_module(config_module="memlab.conf", version_base=None):
            cfg = hydra_compose(config_name=config_name, overrides=list(overrides))
    except (ConfigCompositionException, OmegaConfBaseException) as e:
        raise MemlabError(explain_error(e)) from None
    check_keys(cfg)
    return cfg


def run(overrides: Sequence[str] | DictConfig = (), run_dir: Path | str | None = None) -> RunResult:
    """Run a config (or the one `overrides` compose) into `run_dir`.

    Without `run_dir` the run goes where `memlab run` would put it:
    ``reports/runs/<name>/<time>-<token>_<overrides>/`` (or `output_dir` when the config sets it).

    Args:
        overrides: Hydra overrides to compose (see `compose`), or a config already composed.
        run_dir: The run's folder (None: where `memlab run` would put it).

    Returns:
        The finished run: its folder, metrics and records.
    """
    from memlab.experiment import run_experiment
    from memlab.naming import folder_token, job_name

    given = [] if isinstance(overrides, DictConfig) else list(overrides)
    cfg = overrides if isinstance(overrides, DictConfig) else compose(given)
    if run_dir is None:
        stamp = f"{datetime.now():%Y%m%d-%H%M%S}-{folder_token()}"  # as `memlab run` names it
        suffix = job_name(given)
        run_dir = cfg.output_dir or Path("reports/runs") / cfg.name / (f"{stamp}_{suffix}" if suffix else stamp)
    return run_experiment(cfg, Path(run_dir), overrides=given)
