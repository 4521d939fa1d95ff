"""Every entry of every config group composes and instantiates; bad keys and types fail at start."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from entries import grouped, options
from hydra.utils import get_object
from omegaconf import DictConfig, ListConfig

import memlab
from memlab.errors import MissingExtraError, MissingFileError
from memlab.experiment import COMPONENT_GROUPS, instantiate
from memlab.messages import Message
from memlab.runtime import Component

CONF = Path(__file__).resolve().parents[1] / "conf"
# The groups whose entries are parts of a run (the others are settings: debug, experiment, ...).
GROUPS = ("dataset", "context", "memory", "agent_memory", "longterm", "llm", "embedder", "store", "policy", "hooks")


def entries() -> list[tuple[str, str]]:
    """Every entry of those groups, as the config repository lists them (a new YAML counts with no edit here)."""
    return [(g, name) for g in GROUPS for name in options(g)]


def _compose(make_config: Any, group: str, name: str) -> Any:
    """The entry's node as a run composes it (hooks are added under their own name)."""
    if group == "hooks":
        return make_config(f"+hooks@hooks.{name}={name}").hooks[name]
    return make_config(f"{group}={name}")[group]


SCALAR = bool | int | float | str


def _mirrored(node: Any, built: Any, path: str) -> Iterator[tuple[str, Any, Any]]:
    """(path, config value, built value) for every scalar key of `node` that `built` keeps as an attribute.

    Nested nodes are followed where the built object keeps the built child under the same name
    (a context entry's `strategy`, a memory entry's `strategy`, COMPOSITE's `strategies`, FILTER's
    `rules` and their `roles`), a list item by item.
    """
    if isinstance(node, ListConfig):
        if isinstance(built, list | tuple) and len(built) == len(node):
            for i, (item, obj) in enumerate(zip(node, built, strict=True)):
                if isinstance(item, DictConfig | ListConfig):
                    yield from _mirrored(item, obj, f"{path}[{i}]")
                elif isinstance(item, SCALAR) and isinstance(obj, SCALAR):
                    yield f"{path}[{i}]", item, obj
        return
    for key in node:
        name = str(key)
        if name.startswith("_") or not hasattr(built, name):
            continue
        value, attribute = node[name], getattr(built, name)
        if isinstance(value, DictConfig | ListConfig):
            yield from _mirrored(value, attribute, f"{path}.{name}")
        elif isinstance(value, SCALAR) and isinstance(attribute, SCALAR):
            yield f"{path}.{name}", value, attribute


def _built(group: str, node: Any) -> Any:
    """What a run builds from the entry: the component, the model; an agent memory's history (its memory, if kept)."""
    built = instantiate(node)
    if group != "agent_memory":
        return built
    history = built("config-test")
    return getattr(history, "memory", history)


def _settings(node: Any) -> list[str]:
    """The keys the entry sets (private keys and unset ones aside)."""
    return [str(k) for k, v in node.items() if not str(k).startswith("_") and v is not None]


@pytest.mark.parametrize(("group", "name"), grouped(entries()))
def test_entry_builds_the_values_its_config_sets(make_config, group: str, name: str) -> None:
    """Compose the entry, build it, and find its YAML's and schema's values on the built object.

    An entry whose corpus or optional extra is missing is skipped with the error saying how to get it.
    Some kept value is required of an entry that sets something and whose `_target_` is a class: a
    function's product (a loader's dialogues, policy=auto's choice) keeps what it likes, and the tests
    below check what those build.
    """
    node = _compose(make_config, group, name)
    try:
        built = _built(group, node)
    except (MissingFileError, MissingExtraError) as e:
        pytest.skip(f"{group}={name}: {e}")
    pairs = list(_mirrored(node, built, group))
    wrong = [(path, want, got) for path, want, got in pairs if got != want]
    assert wrong == [], f"{group}={name}: (key, config, built)"
    if isinstance(get_object(node._target_), type) and _settings(node):
        assert pairs, f"{group}={name}: no value of the config is kept by the built {type(built).__name__}"


def test_a_context_entry_builds_what_its_yaml_and_overrides_say(make_config) -> None:
    """The knobs reach the strategy: the YAML's interpolation, the override, the schema's defaults."""
    built = instantiate(make_config("context=trim", "context.keep_last=7").context)
    assert (type(built.strategy).__name__, built.strategy.keep_first, built.strategy.keep_last) == ("Trim", 2, 7)
    built = instantiate(make_config("memory=delete", "memory.strategy.keep_latest=9").memory)
    assert (type(built.strategy).__name__, built.strategy.keep_latest) == ("DeleteStrategy", 9)


def test_the_synthetic_dataset_builds_the_sizes_its_config_sets(make_config) -> None:
    cfg = make_config("dataset=synthetic", "dataset.dialogues=2", "dataset.sessions=3")
    dialogues = instantiate(cfg.dataset)
    assert len(dialogues) == 2 and all(len(d.sessions) == 3 for d in dialogues)
    assert len(instantiate(make_config().dataset)) == make_config().dataset.dialogues == 4


def test_the_filter_entry_builds_the_documents_rules(make_config) -> None:
    """FILTER's default rules: every user message, and the assistant messages that contain 重要."""
    keep = instantiate(make_config("memory=filter").memory).strategy.predicate
    said = [Message("user", "hi"), Message("assistant", "这很重要"), Message("assistant", "ok")]
    assert [keep(m) for m in said] == [True, True, False]


@pytest.mark.parametrize("name", ["default", "chat", "locomo"])
def test_longterm_entries_build_the_documents_settings(make_config, name: str) -> None:
    """The design document's keys (snake case) reach the service's settings, the `chat` agent's overrides too."""
    cfg = make_config(f"longterm={name}")
    service = instantiate(cfg.longterm).service
    for key in ("enabled", "namespace", "max_items", "auto_extract", "auto_load", "load_max_items", "memory_tools"):
        assert getattr(service.defaults, key) == cfg.longterm[key], key
    for agent, overrides in cfg.longterm.agents.items():
        settings = service.settings(agent)
        assert all(getattr(settings, k) == v for k, v in overrides.items() if v is not None), agent
    assert (service.index_spec.kind, service.rules.archive_threshold) == (
        cfg.longterm.index.kind,
        cfg.longterm.archive_threshold,
    )


def test_policy_auto_builds_the_rules_for_a_model_without_tool_calling(make_config) -> None:
    """`policy=auto`: the llm's own tool calling when its backend has it, else the offline rules."""
    assert type(instantiate(make_config("policy=auto", "llm=extractive").policy)).__name__ == "MemoryRulePolicy"
    assert type(instantiate(make_config("policy=auto", "llm=litellm").policy)).__name__ == "ModelToolPolicy"


def test_store_entries_build_their_backend(make_config, tmp_path: Path) -> None:
    assert type(instantiate(make_config("store=memory").store)).__name__ == "InMemoryStore"
    cfg = make_config("store=sqlite", f"store.path={tmp_path / 'x.sqlite'}", "store.pool_size=3")
    store = instantiate(cfg.store)
    assert (store.url.database, store.pool_size) == (str(tmp_path / "x.sqlite"), 3)


@pytest.mark.parametrize(("group", "name"), grouped([e for e in entries() if e[0] in (*COMPONENT_GROUPS, "hooks")]))
def test_component_entries_build_components(make_config, group: str, name: str) -> None:
    assert isinstance(instantiate(_compose(make_config, group, name)), Component)


def test_the_config_tree_is_one_real_folder_of_yaml() -> None:
    """conf/ is the one config tree (the wheel ships it as memlab.conf): no links, no scripts, no second tree."""
    root = Path(__file__).resolve().parents[1]
    tree = [p for p in CONF.rglob("*") if "__pycache__" not in p.parts]
    assert [p for p in tree if p.is_symlink()] == [] and not (root / "memlab" / "conf").exists()
    files = [p for p in tree if p.is_file()]
    assert {p.suffix for p in files} <= {".yaml", ".md", ".py"}
    assert [p.name for p in files if p.suffix == ".py"] == ["__init__.py"]
    assert (CONF / "experiment" / "ci.yaml").is_file()
    assert list((root / "experiments").rglob("*.yaml")) == []  # named experiments live in conf/experiment/


def _run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "memlab", "run", *args], cwd=cwd, capture_output=True, text=True)


def test_unknown_key_fails_at_start_naming_it(tmp_path: Path, memlab_run_err: Callable[..., tuple[int, str]]) -> None:
    status, stderr = memlab_run_err("seeed=1", f"output_dir={tmp_path / 'run'}")
    assert status != 0
    assert "seeed" in stderr
    assert not (tmp_path / "run").exists()


def test_wrong_type_fails_at_start_naming_the_key(
    tmp_path: Path, memlab_run_err: Callable[..., tuple[int, str]]
) -> None:
    status, stderr = memlab_run_err("seed=abc", f"output_dir={tmp_path / 'run'}")
    assert status != 0
    assert "seed" in stderr and "abc" in stderr
    assert not (tmp_path / "run").exists()


def test_cli_outside_the_checkout_runs_the_packaged_config_as_the_library_does(tmp_path: Path) -> None:
    """From another folder the CLI composes the packaged config: the same metrics as `memlab.run` in this process."""
    out = _run(f"output_dir={tmp_path / 'run'}", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    here = memlab.run([], run_dir=tmp_path / "in_process")
    outside = json.loads((tmp_path / "run" / "metrics.json").read_text())
    assert outside == json.loads((here.run_dir / "metrics.json").read_text())
    assert outside["calls"] > 0 and outside["tokens.prompt.mean"] > 0
