"""Shared fixtures: paths to the real corpora beside the checkout, and composed configs."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest
from hydra import compose, initialize_config_module
from omegaconf import DictConfig

from memlab import config

ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("MEMLAB_SHARED", ROOT.parent / "shared"))
LOCOMO = SHARED / "datasets" / "locomo" / "locomo_dev7.json"
TAU_BENCH = SHARED / "datasets" / "tau_bench" / "airline_gpt4o_dev150.json"


def _require(path: Path) -> Path:
    if not path.exists():
        pytest.skip(f"corpus not found at {path} (set MEMLAB_SHARED to the folder holding datasets/)")
    return path


@pytest.fixture(scope="session")
def locomo_path() -> Path:
    return _require(LOCOMO)


@pytest.fixture(scope="session")
def tau_bench_path() -> Path:
    return _require(TAU_BENCH)


@pytest.fixture
def make_config() -> Callable[..., DictConfig]:
    """Compose the app's config with overrides, as `memlab run` would."""
    config.register()

    def _compose(*overrides: str) -> DictConfig:
        with initialize_config_module(config_module="memlab.conf", version_base=None):
            return compose(config_name="config", overrides=list(overrides), return_hydra_config=False)

    return _compose
