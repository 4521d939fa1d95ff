"""Each public name means one thing: no two memlab subpackages or top-level modules export it as different objects."""

from __future__ import annotations

import importlib
import pkgutil
from collections import defaultdict
from types import ModuleType
from typing import Any

import memlab

# Every subpackage's own registry of its config schemas, which memlab.config collects: one name by design.
PER_PACKAGE_NAMES = frozenset({"SCHEMAS"})


def public_names(module: ModuleType) -> dict[str, Any]:
    """What a module exports: its `__all__`, or else the classes and functions it defines without a leading _."""
    names = getattr(module, "__all__", None)
    if names is None:
        names = [
            n
            for n, v in vars(module).items()
            if not n.startswith("_") and getattr(v, "__module__", None) == module.__name__
        ]
    return {name: getattr(module, name) for name in names}


def exports() -> dict[str, dict[str, Any]]:
    """{child of memlab: its public names}, for every subpackage and module but `__main__` (it runs the CLI)."""
    children = [m.name for m in pkgutil.iter_modules(memlab.__path__) if m.name != "__main__"]
    return {name: public_names(importlib.import_module(f"memlab.{name}")) for name in children}


def clashes(found: dict[str, dict[str, Any]]) -> dict[str, list[str]]:
    """{name: the modules exporting it} for each name two modules export as different objects."""
    owners: dict[str, dict[str, Any]] = defaultdict(dict)
    for module, names in found.items():
        for name, value in names.items():
            if name not in PER_PACKAGE_NAMES:
                owners[name][module] = value
    return {name: sorted(by) for name, by in owners.items() if len({id(v) for v in by.values()}) > 1}


def test_a_re_export_is_no_clash_but_a_second_object_is() -> None:
    shared, other = object(), object()
    found = {"a": {"Shared": shared, "Event": shared}, "b": {"Shared": shared, "Event": other}, "c": {"SCHEMAS": {}}}
    assert clashes({**found, "d": {"SCHEMAS": {1: 2}}}) == {"Event": ["a", "b"]}


def test_every_subpackage_is_collected() -> None:
    found = exports()
    pipeline = {"dialogues", "runtime", "context", "memory", "longterm", "sim", "metrics", "report", "eval"}
    assert pipeline | {"llm", "embed", "stores", "messages", "tokens", "trace"} <= found.keys()
    assert {"Dialogue", "LifeEvent"} <= found["dialogues"].keys() and "Event" in found["trace"]
    assert sum(len(names) for names in found.values()) > 300


def test_no_name_is_exported_by_two_subpackages_for_different_objects() -> None:
    assert clashes(exports()) == {}
