"""The config repository as `memlab run` sees it: the groups and entries the generic tests iterate over.

Read from Hydra, not from a folder listing, so entries added on a search path count too.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from functools import cache
from typing import Any

import pytest
from hydra import initialize_config_module
from hydra.core.config_loader import ConfigLoader
from hydra.core.global_hydra import GlobalHydra
from hydra.core.object_type import ObjectType
from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.core.override_parser.types import Override
from omegaconf import DictConfig

from memlab import config

# Entries whose build loads all-MiniLM-L6-v2 (torch and the model, about 5 CPU s a process): their tests join
# tests/embed/test_minilm.py's xdist group, so that one worker loads the model.
MINILM_ENTRIES = {("embedder", "minilm"), ("longterm", "locomo_semantic")}


def grouped(entries: list[tuple[str, str]]) -> list[Any]:
    """`entries` as parameters, those of `MINILM_ENTRIES` in the `minilm` xdist group."""
    minilm = pytest.mark.xdist_group("minilm")
    return [pytest.param(*e, marks=minilm) if e in MINILM_ENTRIES else e for e in entries]


@cache
def registered() -> None:
    """`memlab.config.register()` once per process (about 0.2 CPU s a call): no test changes the ConfigStore."""
    config.register()


@contextmanager
def repository() -> Iterator[ConfigLoader]:
    registered()
    with initialize_config_module(config_module="memlab.conf", version_base=None):
        yield GlobalHydra.instance().config_loader()


def groups() -> list[str]:
    return list(_groups())


@cache
def _groups() -> tuple[str, ...]:
    with repository() as loader:
        return tuple(sorted(loader.list_groups("")))


def options(group: str) -> list[str]:
    """The names `group=` accepts (a new list each call; the listing is read once per process)."""
    return list(_options(group))


@cache
def _options(group: str) -> tuple[str, ...]:
    with repository() as loader:
        return tuple(sorted(loader.get_group_options(group, ObjectType.CONFIG)))


def swept(sweeper: DictConfig) -> list[Override]:
    """A sweeper's `params` as parsed overrides."""
    return OverridesParser.create().parse_overrides([f"{k}={v}" for k, v in (sweeper.get("params") or {}).items()])


def one_job(sweeper: DictConfig) -> list[str]:
    """Overrides that cut a sweep to one job: each choice at its first value, one trial."""
    first = [
        f"{o.get_key_element()}={next(o.sweep_string_iterator())}" for o in swept(sweeper) if o.is_discrete_sweep()
    ]
    return first + (["hydra.sweeper.n_trials=1"] if "n_trials" in sweeper else [])


def context_strategy(name: str, knobs: Mapping[str, object], *overrides: str) -> Any:
    """The strategy of `context=name`, each knob set where the entry has it (`context.<k>`, else the strategy's)."""
    from memlab.api import compose
    from memlab.experiment import instantiate

    node = compose([f"context={name}", *overrides]).context
    strategy = node.get("strategy") or {}
    knob_overrides = [
        f"context.{k}={v}" if k in node else f"context.strategy.{k}={v}"
        for k, v in knobs.items()
        if k in node or k in strategy
    ]
    return getattr(instantiate(compose([f"context={name}", *overrides, *knob_overrides]).context), "strategy", None)


def is_peer(strategy: object) -> bool:
    """A strategy wrapping another framework (memlab.context.peers): its tool-call orphans are measured, not barred."""
    return type(strategy).__module__.startswith("memlab.context.peers")
