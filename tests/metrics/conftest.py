"""Fixtures for metric tests that need real runs: a config composer usable at module scope."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from entries import registered
from hydra import compose, initialize_config_module
from omegaconf import DictConfig


@pytest.fixture(scope="session")
def compose_config() -> Callable[..., DictConfig]:
    """Compose the app's config with overrides, as `memlab run` would (for module-scoped run fixtures)."""
    registered()

    def _compose(*overrides: str) -> DictConfig:
        with initialize_config_module(config_module="memlab.conf", version_base=None):
            return compose(config_name="config", overrides=list(overrides))

    return _compose
