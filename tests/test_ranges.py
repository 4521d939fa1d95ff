"""Every numeric field of every registered schema declares a range, and an out-of-range value in any
of them stops a run at start (status 2, one line naming the key, the value and the valid range)."""

from __future__ import annotations

import dataclasses
import typing
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from omegaconf import DictConfig, OmegaConf

from memlab import config
from memlab.ranges import ConfigRangeError, Range, check_config, field_range

CONF = Path(__file__).resolve().parents[1] / "conf"  # installed as the package memlab.conf
NOT_ENTRIES = {"experiment", "hydra", "compare"}


def _numeric(hint: Any) -> bool:
    args = set(typing.get_args(hint)) - {type(None)} or {hint}
    return bool(args) and args <= {int, float}


def test_every_numeric_schema_field_declares_a_range() -> None:
    missing = [
        f"{cls.__module__}.{cls.__name__}.{f.name}"
        for cls in config.schema_classes()
        for f in dataclasses.fields(cls)
        if _numeric(typing.get_type_hints(cls)[f.name]) and field_range(f) is None
    ]
    assert missing == []


def _entries() -> list[str]:
    """One override per registered entry of every config group (`group=name`)."""
    found = []
    for group in sorted(p for p in CONF.iterdir() if p.is_dir() and p.name not in NOT_ENTRIES):
        for entry in sorted(group.glob("*.yaml")):
            if group.name == "hooks":
                found.append(f"+hooks@hooks.{entry.stem}={entry.stem}")
            else:
                found.append(f"{group.name}={entry.stem}")
    return found


def _ranged_leaves(cfg: DictConfig, path: str = "") -> Iterator[tuple[str, type, str, Range]]:
    """(path, schema, field, range) of every ranged field in the composed config."""
    schema = OmegaConf.get_type(cfg)
    fields = {f.name: f for f in dataclasses.fields(schema)} if dataclasses.is_dataclass(schema) else {}
    for key in cfg:
        name = str(key)
        where = f"{path}.{name}" if path else name
        node = cfg._get_node(name)
        bounds = field_range(fields[name]) if name in fields else None
        if bounds is not None:
            yield where, typing.cast(type, schema), name, bounds
        elif isinstance(node, DictConfig):
            yield from _ranged_leaves(node, where)


@contextmanager
def set_for_now(cfg: DictConfig, path: str, value: Any) -> Iterator[None]:
    """`path` set to `value` in `cfg` for the block, then its node's own value (an interpolation stays one) back.

    In place rather than on a copy of the whole config per field: the copies were 40% of the test's time.
    """
    parent_path, _, key = path.rpartition(".")
    parent = OmegaConf.select(cfg, parent_path) if parent_path else cfg
    was = parent._get_node(key)._value()
    OmegaConf.update(cfg, path, value, force_add=False)
    try:
        yield
    finally:
        parent[key] = was


def test_every_ranged_field_refuses_a_value_outside_its_range(make_config: Callable[..., DictConfig]) -> None:
    exercised: set[tuple[type, str]] = set()
    for entry in ["name=root", *_entries()]:
        cfg = make_config(*([] if entry == "name=root" else [entry]))
        check_config(cfg)  # every default is in range
        composed = OmegaConf.to_yaml(cfg)
        for path, schema, name, bounds in _ranged_leaves(cfg):
            bad = bounds.outside()
            if typing.get_type_hints(schema)[name] in (int, int | None):
                bad = int(bad)
            with set_for_now(cfg, path, bad):
                stored = OmegaConf.select(cfg, path)  # as the schema's type holds it (-1 in a float field is -1.0)
                with pytest.raises(ConfigRangeError) as caught:
                    check_config(cfg)
            assert str(caught.value) == f"{path}={stored!r} is out of range; valid: {bounds}"
            exercised.add((schema, name))
        assert OmegaConf.to_yaml(cfg) == composed  # every field got its own value back
    declared = {
        (cls, f.name) for cls in config.schema_classes() for f in dataclasses.fields(cls) if field_range(f) is not None
    }
    assert declared - exercised == set()  # every declared range was reached through a real entry


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ("memory.strategy.keep_latest=-1", "memory.strategy.keep_latest=-1 is out of range; valid: >= 0"),
        ("memory.every_turns=0", "memory.every_turns=0 is out of range; valid: >= 1"),
        ("seed=-1", "seed=-1 is out of range; valid: >= 0 and <= 4294967295"),
        ("dataset.message_chars_mean=1e12", "dataset.message_chars_mean=1000000000000.0 is out of range"),
    ],
)
def test_memlab_run_stops_before_writing_anything(
    tmp_path: Path, memlab_run_err: Callable[..., tuple[int, str]], override: str, message: str
) -> None:
    """The defect: `memory=delete memory.strategy.keep_latest=-1` exited 0 and emptied every history."""
    status, stderr = memlab_run_err("memory=delete", "store=sqlite", override)
    assert status == 2, stderr
    assert stderr.strip().splitlines() == [f"memlab: error: {message}"] or message in stderr
    assert len(stderr.strip().splitlines()) == 1, stderr
    assert list(tmp_path.iterdir()) == []  # no run folder, no store file
