"""The config repository as `memlab run` sees it: the groups and entries the generic tests iterate over.

Read from Hydra, not from a folder listing, so entries added on a search path count too.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from hydra import initialize_config_module
from hydra.core.config_loader import ConfigLoader
from hydra.core.global_hydra import GlobalHydra
from hydra.core.object_type import ObjectType

from memlab import config


@contextmanager
def repository() -> Iterator[ConfigLoader]:
    config.register()
    with initialize_config_module(config_module="memlab.conf", version_base=None):
        yield GlobalHydra.instance().config_loader()


def groups() -> list[str]:
    with repository() as loader:
        return sorted(loader.list_groups(""))


def options(group: str) -> list[str]:
    """The names `group=` accepts."""
    with repository() as loader:
        return sorted(loader.get_group_options(group, ObjectType.CONFIG))
