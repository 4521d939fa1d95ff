"""Config files parsed once per process (memlab.config_source): the same configs, never a stale or changed one."""

from __future__ import annotations

from collections.abc import Callable
from importlib import resources
from pathlib import Path
from typing import Any

import pytest
from entries import registered
from hydra import compose, initialize_config_dir, initialize_config_module
from hydra._internal import defaults_list
from hydra._internal.core_plugins.importlib_resources_config_source import ImportlibResourcesConfigSource
from omegaconf import DictConfig, OmegaConf

from memlab import config_source
from memlab.config_source import _HYDRAS_INTERPOLATION_MAP, SCHEME, CachedPackageSource, interpolation_map

CONF = Path(__file__).resolve().parents[1] / "conf"


def test_every_file_loads_as_hydra_loads_it() -> None:
    """Each YAML of memlab.conf, loaded twice (the second from the cache), is Hydra's own load of it."""
    hydra_source = ImportlibResourcesConfigSource("main", "pkg://memlab.conf")
    cached = CachedPackageSource("main", f"{SCHEME}://memlab.conf")
    for path in sorted(CONF.rglob("*.yaml")):
        name = path.relative_to(CONF).as_posix()
        want = hydra_source.load_config(name)
        for got in (cached.load_config(name), cached.load_config(name)):
            assert OmegaConf.to_yaml(got.config) == OmegaConf.to_yaml(want.config), name
            assert got.header == want.header, name


def test_a_callers_change_reaches_no_later_load(make_config: Callable[..., DictConfig]) -> None:
    """Hydra pops `defaults` from what it loads and merges the nodes into the composed config: each load is a copy."""
    source = CachedPackageSource("main", f"{SCHEME}://memlab.conf")
    first = source.load_config("context/trim").config
    assert isinstance(first, DictConfig)
    first.pop("defaults")
    first.strategy = "changed"
    again = source.load_config("context/trim").config
    assert "defaults" in again and again.strategy != "changed"

    composed = make_config("context=trim")
    want = OmegaConf.to_yaml(composed)
    composed.sim.max_dialogues = 3
    composed.tags.append("changed")
    composed.context = {"changed": True}
    assert OmegaConf.to_yaml(make_config("context=trim")) == want


def _recompose(config_module: str, overrides: list[str]) -> DictConfig:
    with initialize_config_module(config_module=config_module, version_base=None):
        return compose(config_name="config", overrides=overrides)


def test_an_edited_package_file_is_read_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A package's config file edited between two composes (same size, within the clock's tick) is read again."""
    registered()
    (tmp_path / "edited_conf").mkdir()
    (tmp_path / "edited_conf" / "__init__.py").write_text("")
    monkeypatch.syspath_prepend(str(tmp_path))
    config = tmp_path / "edited_conf" / "config.yaml"
    for value in (1, 2, 3):
        config.write_text(f"value: {value}\n")
        assert resources.files("edited_conf").joinpath("config.yaml").read_text() == f"value: {value}\n"
        assert _recompose("edited_conf", []).value == value


@pytest.mark.parametrize(
    "overrides", [[], ["experiment=demo"], ["longterm=locomo", "+hooks@hooks.summarization=summarization"]]
)
def test_configs_compose_as_with_hydras_interpolation_map(
    overrides: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """With the map built only for defaults lists that read it (`interpolation_map`), memlab's configs compose to
    Hydra's text, `hydra` node included; Hydra's own builder is never called for them."""
    registered()
    assert defaults_list._create_interpolation_map is interpolation_map
    built: list[int] = []

    def hydras(*args: Any) -> DictConfig:
        built.append(1)
        return _HYDRAS_INTERPOLATION_MAP(*args)

    monkeypatch.setattr(config_source, "_HYDRAS_INTERPOLATION_MAP", hydras)
    with initialize_config_module(config_module="memlab.conf", version_base=None):
        ours = OmegaConf.to_yaml(compose(config_name="config", overrides=overrides, return_hydra_config=True))
        assert built == []
        monkeypatch.setattr(defaults_list, "_create_interpolation_map", hydras)
        assert OmegaConf.to_yaml(compose(config_name="config", overrides=overrides, return_hydra_config=True)) == ours
        assert built


def test_a_defaults_list_interpolation_still_resolves(tmp_path: Path) -> None:
    """Hydra's `- pair: ${data}_${model}` (its docs' example) picks the entry named by the choices made so far."""
    registered()
    for group, name, text in [
        ("data", "a", "{}"),
        ("data", "b", "{}"),
        ("model", "m", "{}"),
        ("pair", "a_m", "value: 1"),
        ("pair", "b_m", "value: 2"),
    ]:
        (tmp_path / group).mkdir(exist_ok=True)
        (tmp_path / group / f"{name}.yaml").write_text(text + "\n")
    (tmp_path / "config.yaml").write_text("defaults:\n  - data: a\n  - model: m\n  - pair: ${data}_${model}\n")
    with initialize_config_dir(config_dir=str(tmp_path), version_base=None):
        assert compose(config_name="config").pair.value == 1
        assert compose(config_name="config", overrides=["data=b"]).pair.value == 2
