"""Valid ranges of numeric config fields, declared on the schema and checked before a run starts.

A schema field declares its range with `ranged` (or a shorthand: `count`, `positive`, `rate`);
`check_config` walks a composed config, finds every node built from a schema dataclass, and
refuses the first value out of its range with a `MemlabError` that names the key, the value and
the valid range, so a typo such as ``memory.strategy.keep_latest=-1`` stops the run (status 2)
before anything is read or written. `None` (where a field allows it) means "off" and is not checked.

>>> from dataclasses import dataclass
>>> from omegaconf import OmegaConf
>>> @dataclass
... class Window:
...     max_items: int = count(20)
>>> check_config(OmegaConf.structured(Window(max_items=5)))
>>> check_config(OmegaConf.structured(Window(max_items=-1)), "agent_memory.compressor")
Traceback (most recent call last):
...
memlab.ranges.ConfigRangeError: agent_memory.compressor.max_items=-1 is out of range; valid: >= 0
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any

from memlab.errors import MemlabError

RANGE = "memlab.range"  # the dataclass field metadata key
SEED_MAX = 2**32 - 1  # numpy's seeds are 32-bit


class ConfigRangeError(MemlabError):
    """A numeric config value outside its declared range."""


@dataclass(frozen=True)
class Range:
    """Bounds of a numeric field; `ge`/`le` are inclusive, `gt`/`lt` exclusive."""

    ge: float | None = None
    gt: float | None = None
    le: float | None = None
    lt: float | None = None

    def __contains__(self, value: float) -> bool:
        if isinstance(value, float) and math.isnan(value):
            return False
        return (
            (self.ge is None or value >= self.ge)
            and (self.gt is None or value > self.gt)
            and (self.le is None or value <= self.le)
            and (self.lt is None or value < self.lt)
        )

    def __str__(self) -> str:
        bounds = ((">=", self.ge), (">", self.gt), ("<=", self.le), ("<", self.lt))
        return " and ".join(f"{op} {_num(b)}" for op, b in bounds if b is not None)

    def outside(self) -> float:
        """A value just outside the range (for tests that feed one)."""
        if self.ge is not None:
            return self.ge - 1
        if self.gt is not None:
            return self.gt
        if self.le is not None:
            return self.le + 1
        if self.lt is not None:
            return self.lt
        raise ValueError("an unbounded range has no value outside it")


def _num(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else str(x)


def ranged(
    default: Any, *, ge: float | None = None, gt: float | None = None, le: float | None = None, lt: float | None = None
) -> Any:
    """A dataclass field with `default` whose values must lie in the given bounds."""
    return dataclasses.field(default=default, metadata={RANGE: Range(ge, gt, le, lt)})


def count(default: Any, *, le: float | None = None) -> Any:
    """A count: an integer >= 0 (optionally at most `le`)."""
    return ranged(default, ge=0, le=le)


def positive(default: Any, *, le: float | None = None) -> Any:
    """A budget or size: > 0 (optionally at most `le`)."""
    return ranged(default, gt=0, le=le)


def rate(default: Any) -> Any:
    """A rate or probability in [0, 1]."""
    return ranged(default, ge=0, le=1)


def seed(default: Any = 0) -> Any:
    """A random seed: 0 <= seed <= 2**32 - 1 (what numpy accepts)."""
    return ranged(default, ge=0, le=SEED_MAX)


def field_range(field: dataclasses.Field[Any]) -> Range | None:
    """The range a schema field declares, or None."""
    found = field.metadata.get(RANGE)
    return found if isinstance(found, Range) else None


def check_values(schema: type, prefix: str, **values: Any) -> None:
    """Check keyword `values` against the ranges `schema` declares (for library calls that skip the config)."""
    declared = {f.name: r for f in dataclasses.fields(schema) if (r := field_range(f)) is not None}
    for name, value in values.items():
        bounds = declared.get(name)
        if bounds is not None and value is not None and value not in bounds:
            raise ConfigRangeError(f"{prefix}.{name}={value!r} is out of range; valid: {bounds}")


def check_config(cfg: Any, prefix: str = "") -> None:
    """Raise `ConfigRangeError` for the first numeric value of `cfg` outside its schema's range."""
    from omegaconf import DictConfig, ListConfig, OmegaConf

    def walk(node: Any, path: str) -> None:
        if isinstance(node, DictConfig):
            schema = OmegaConf.get_type(node)
            ranges = (
                {f.name: r for f in dataclasses.fields(schema) if (r := field_range(f)) is not None}
                if schema is not None and dataclasses.is_dataclass(schema)
                else {}
            )
            for key in node:
                name = str(key)
                where = f"{path}.{name}" if path else name
                if name in ranges:
                    value = node[name]
                    if value is not None and not isinstance(value, bool) and value not in ranges[name]:
                        raise ConfigRangeError(f"{where}={value!r} is out of range; valid: {ranges[name]}")
                else:
                    walk(node._get_node(name), where)
        elif isinstance(node, ListConfig):
            for i in range(len(node)):
                walk(node._get_node(i), f"{path}[{i}]")

    walk(cfg, prefix)
