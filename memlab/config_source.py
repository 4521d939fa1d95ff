"""Package config files parsed once per process: Hydra's ``pkg://`` source with a cache of each file's parse.

Hydra caches loaded files within one compose only, so each compose reads and parses again every YAML file it
names (~1.3 ms a file, ~17 for memlab's `config`): a sweep composes once per job, a pytest worker hundreds of
times. `CachedPackageSource` keys each parse by the file's text, read on every load (an edited file is a new
key, never served stale), and hands out a deep copy: Hydra pops `defaults` from the config it loads and merges
its nodes into the composed config without copying them. `CachedSearchPath` points every ``pkg://`` entry of
the search path at it; `install()` registers both in Hydra's plugin registry, and has Hydra build a defaults
list's map of known choices only when the list has an entry that reads it (`interpolation_map`).
"""

from __future__ import annotations

import copy
import io
from typing import Any

from hydra._internal import defaults_list as hydra_defaults
from hydra._internal.core_plugins.importlib_resources_config_source import ImportlibResourcesConfigSource
from hydra.core.config_search_path import ConfigSearchPath
from hydra.core.default_element import InputDefault
from hydra.core.plugins import Plugins
from hydra.plugins.config_source import ConfigResult, ConfigSource
from hydra.plugins.search_path_plugin import SearchPathPlugin
from omegaconf import DictConfig, ListConfig, OmegaConf

SCHEME = "pkg-parsed"

_PARSED: dict[str, DictConfig | ListConfig] = {}


def parsed(text: str) -> DictConfig | ListConfig:
    """`OmegaConf.load` of a config file's `text`: parsed the first time, a deep copy of that parse after."""
    cfg = _PARSED.get(text)
    if cfg is None:
        cfg = _PARSED[text] = OmegaConf.load(io.StringIO(text))
    return copy.deepcopy(cfg)


class CachedPackageSource(ImportlibResourcesConfigSource):
    """Hydra's package source (``pkg://``) under its own scheme, each file's parse cached by `parsed`."""

    @staticmethod
    def scheme() -> str:
        return SCHEME

    def _read_config(self, res: Any) -> ConfigResult:
        text = res.read_text(encoding="utf-8")
        return ConfigResult(
            config=parsed(text),
            path=f"{self.scheme()}://{self.path}",
            provider=self.provider,
            header=ConfigSource._get_header_dict(text[:512]),  # Hydra reads the header from the first 512
        )


class CachedSearchPath(SearchPathPlugin):
    """Every ``pkg://`` entry of a new search path (memlab.conf, hydra.conf) read by `CachedPackageSource`."""

    def manipulate_search_path(self, search_path: ConfigSearchPath) -> None:
        for element in search_path.get_path():
            if element.path is not None and element.path.startswith("pkg://"):
                element.path = f"{SCHEME}://{element.path.removeprefix('pkg://')}"


_HYDRAS_INTERPOLATION_MAP = hydra_defaults._create_interpolation_map


def interpolation_map(
    overrides: hydra_defaults.Overrides, defaults_list: list[InputDefault], self_added: bool
) -> DictConfig:
    """Hydra's map of the choices made so far, built only when an entry of `defaults_list` interpolates one.

    Hydra builds it (an `OmegaConf.create` of every choice, ~24% of a compose) for every config with a defaults
    list and reads it only to resolve entries such as ``- db: ${db_choice}``, which memlab's configs do not use;
    without such an entry the map is never read, so an empty one stands in.
    """
    if any(not d.is_self() and not d.is_override() and d.is_interpolation() for d in defaults_list):
        return _HYDRAS_INTERPOLATION_MAP(overrides, defaults_list, self_added)
    return OmegaConf.create()


def install() -> None:
    """Install the source and the search path rewrite in Hydra's plugins (before Hydra builds a search path), and
    `interpolation_map` in Hydra's defaults list code."""
    plugins = Plugins.instance()
    plugins.register(CachedPackageSource)
    plugins.register(CachedSearchPath)
    hydra_defaults._create_interpolation_map = interpolation_map
