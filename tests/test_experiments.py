"""Every named experiment (`memlab run experiment=NAME`) runs end to end on a tiny slice and writes its results.

The experiments are the `experiment` group of Hydra's config repository, so a new conf/experiment/NAME.yaml is
picked up with no edit here. Each runs through the CLI, in this process, with `debug=default` (one dialogue,
two sessions). A sweep runs one job (each swept key at its first value; a sweeper with `n_trials`, one trial)
and must leave its comparison; every other job of the sweep is composed and validated, not replayed.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import pytest
from entries import one_job, options, repository, swept
from hydra import compose
from hydra._internal.core_plugins.basic_sweeper import BasicSweeper
from hydra.types import RunMode
from omegaconf import DictConfig, OmegaConf

from memlab import api
from memlab.report.sweep import job_number

TINY = ("debug=default",)
RUN_FILES = ("metrics.json", "manifest.json", "config.yaml", "calls.csv", "report.html")


def composed(name: str) -> DictConfig:
    """The experiment's tiny-slice config, its `hydra` node (mode, sweeper) included."""
    with repository():
        return compose("config", overrides=[f"experiment={name}", *TINY], return_hydra_config=True)


def sweep_jobs(sweeper: DictConfig) -> list[list[str]]:
    """Every job's overrides when the sweep is a product of choices (BasicSweeper's), else []."""
    params = swept(sweeper)
    if any(o.is_sweep_override() and not o.is_discrete_sweep() for o in params):
        return []
    (batch,) = BasicSweeper.split_arguments(params, None)
    return batch


def assert_run(run_dir: Path) -> None:
    missing = [f for f in RUN_FILES if not (run_dir / f).is_file()]
    assert not missing, f"{run_dir} has no {', '.join(missing)}"
    assert json.loads((run_dir / "metrics.json").read_text())["calls"] > 0, f"{run_dir}: no model call replayed"


@pytest.mark.parametrize("name", options("experiment"))
def test_experiment_runs_on_a_tiny_slice(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, memlab_cli: Callable[..., int], shared_corpora: Path, name: str
) -> None:
    cfg = composed(name)
    data = Path(str(cfg.dataset.get("path") or ""))
    if data.is_relative_to(shared_corpora) and not data.is_file():
        pytest.skip(f"experiment={name} reads {data}: not found (set MEMLAB_SHARED to the folder holding datasets/)")
    sweep = cfg.hydra.mode == RunMode.MULTIRUN
    out = tmp_path / name
    monkeypatch.chdir(tmp_path)
    cut = one_job(cfg.hydra.sweeper) if sweep else []
    status = memlab_cli("run", f"experiment={name}", *TINY, *cut, f"hydra.run.dir={out}", f"hydra.sweep.dir={out}")
    assert status == 0, f"memlab run experiment={name} {' '.join(cut)} exited {status}"
    if not sweep:
        assert_run(out)
        return
    table = pd.read_csv(out / "comparison.csv")
    assert len(table) == 1 and (table["status"] == "ok").all(), table.to_dict("records")
    (job,) = [p for p in out.iterdir() if p.is_dir() and job_number(p) == 0]
    assert_run(job)
    assert (out / "comparison.html").is_file() and (out / "comparison.md").is_file()
    for job in sweep_jobs(cfg.hydra.sweeper)[1:]:  # the first one ran
        job_cfg = api.compose([f"experiment={name}", *TINY, *job])  # validated: an unknown key raises
        OmegaConf.resolve(job_cfg)  # every interpolation resolves


_ALEMBIC_PLUGINS = """
import logging.config
from hydra import compose, initialize_config_module
from omegaconf import OmegaConf
from memlab import config
config.register()
with initialize_config_module("memlab.conf", version_base=None):
    cfg = compose("config", overrides=["experiment=optuna_window"], return_hydra_config=True)
logging.config.dictConfig(OmegaConf.to_container(cfg.hydra.hydra_logging, resolve=True))
import alembic.autogenerate  # what the optuna sweeper imports; it logs each plugin it sets up at INFO
"""


def test_a_sweep_s_hydra_log_leaves_out_alembic_s_plugin_setup() -> None:
    """Hydra's own log (`hydra.hydra_logging`) is on while the optuna sweeper loads, which imports alembic: seven
    "setup plugin alembic..." lines a sweep's user cannot use. In a fresh process, where alembic is imported first."""
    pytest.importorskip("alembic")
    done = subprocess.run([sys.executable, "-c", _ALEMBIC_PLUGINS], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "setup plugin" not in done.stdout + done.stderr
