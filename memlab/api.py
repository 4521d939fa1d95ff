"""The Python API: compose a validated config from overrides, run it, get the metrics back.

>>> cfg = compose(["context=sliding_window", "context.max_tokens=2000"])
>>> cfg.context.strategy.max_tokens
2000
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from omegaconf import DictConfig

if TYPE_CHECKING:
    from memlab.experiment import RunResult


def compose(overrides: Sequence[str] = (), config_name: str = "config") -> DictConfig:
    """The config `memlab run OVERRIDES` would run, validated.

    A wrong override raises `MemlabError` with the line the command line prints (an unknown key
    with the node's keys and "did you mean", a missing entry with the entries there are, a value
    out of its range). Called inside another Hydra application, it leaves that application's Hydra
    as it found it. Hydra's own settings are the command line's: a preset that sweeps (``experiment=demo``)
    composes as its base config, one run, not its jobs (`memlab run` launches them).

    Args:
        overrides: Hydra overrides, as on the command line (``["context=trim", "seed=3"]``).
        config_name: The top-level config of memlab.conf to start from.

    Returns:
        The composed config, its keys checked against the schemas and its values against their ranges.
    """
    from hydra import compose as hydra_compose
    from hydra import initialize_config_module
    from hydra.errors import ConfigCompositionException, OverrideParseException
    from omegaconf.errors import OmegaConfBaseException

    from memlab import config
    from memlab.config_keys import check_keys, explain_error
    from memlab.errors import MemlabError
    from memlab.ranges import check_config

    given = _overrides(overrides)
    config.register()
    try:
        with _own_hydra(), initialize_config_module(config_module="memlab.conf", version_base=None):
            cfg = hydra_compose(config_name=config_name, overrides=given)
    except (ConfigCompositionException, OverrideParseException, OmegaConfBaseException) as e:
        raise MemlabError(explain_error(e, given)) from None
    _refuse_hydra_folders(given)
    check_keys(cfg)
    check_config(cfg)
    return cfg


def run(overrides: Sequence[str] | DictConfig = (), run_dir: Path | str | None = None) -> RunResult:
    """Run a config (or the one `overrides` compose) into `run_dir`.

    Without `run_dir` the run goes where `memlab run` would put it:
    ``reports/runs/<name>/<time>-<token>_<overrides>/`` (or `output_dir` when the config sets it).
    The caller's `random` and `numpy.random` states are as they were after the run (it seeds them for itself).
    What the command line ends with one `memlab: error:` line (a wrong value, a `_target_` that cannot be
    imported or built, a missing file) raises `MemlabError` with that line; nothing is left of the run.

    Args:
        overrides: Hydra overrides to compose (see `compose`), or a config already composed.
        run_dir: The run's folder (None: where `memlab run` would put it).

    Returns:
        The finished run: its folder, metrics and records.
    """
    import random

    import numpy as np
    from hydra.errors import InstantiationException
    from omegaconf.errors import OmegaConfBaseException

    from memlab.config_keys import explain_error, one_line, root_cause
    from memlab.errors import MemlabError
    from memlab.experiment import run_experiment
    from memlab.naming import folder_token, job_name

    given = [] if isinstance(overrides, DictConfig) else _overrides(overrides)
    cfg = overrides if isinstance(overrides, DictConfig) else compose(given)
    states = random.getstate(), np.random.get_state()
    try:
        if run_dir is None:
            stamp = f"{datetime.now():%Y%m%d-%H%M%S}-{folder_token()}"  # as `memlab run` names it
            suffix = job_name(given)
            run_dir = cfg.output_dir or Path("reports/runs") / cfg.name / (f"{stamp}_{suffix}" if suffix else stamp)
        return run_experiment(cfg, Path(run_dir), overrides=given)
    except InstantiationException as e:  # a `_target_` that cannot be imported or built: the command line's line
        raise MemlabError(one_line(root_cause(e))) from e
    except OmegaConfBaseException as e:  # a key the config lacks, a value that cannot be resolved
        raise MemlabError(explain_error(e)) from e
    finally:
        random.setstate(states[0])
        np.random.set_state(states[1])


def _overrides(overrides: object) -> list[str]:
    """`overrides` as a list of strings, or a `MemlabError` (a lone string would be read a character at a time)."""
    from memlab.errors import MemlabError

    if isinstance(overrides, str | bytes) or not isinstance(overrides, Sequence):  # in order: a later one wins
        raise MemlabError(f"overrides: expected a list of strings such as ['context=trim'], got {overrides!r:.80}")
    wrong = [o for o in overrides if not isinstance(o, str)]
    if wrong:
        raise MemlabError(f"overrides: expected strings such as 'context=trim', got {wrong[0]!r:.80}")
    return list(overrides)


@contextmanager
def _own_hydra() -> Iterator[None]:
    """Memlab's config composed inside another Hydra application: its Hydra is set aside, then put back."""
    from hydra.core.global_hydra import GlobalHydra
    from hydra.initialize import get_gh_backup, restore_gh_from_backup

    if not GlobalHydra.instance().is_initialized():
        yield
        return
    outer = get_gh_backup()
    GlobalHydra.instance().clear()
    try:
        yield
    finally:
        restore_gh_from_backup(outer)


def _refuse_hydra_folders(overrides: Sequence[str]) -> None:
    """A run folder given through Hydra's settings, which only `memlab run` reads: `run` takes `run_dir`."""
    from memlab.errors import MemlabError

    for given in overrides:
        if given.lstrip("+~").startswith(("hydra.run.dir", "hydra.sweep.dir")):
            raise MemlabError(f"{given}: memlab.run puts a run in its run_dir argument, not in Hydra's folders")
