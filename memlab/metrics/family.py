"""Metric families: the functions that compute metrics.json, each marked where it is defined.

A family is a function of a module of `memlab.metrics` decorated with `@metric_family`. It takes any
`RunInputs` fields as parameters of the same name (its other parameters keep their defaults) and
returns the metrics it alone writes; `compute_metrics` calls every family `families()` finds, by
module name and then source line, and refuses a metric name that two of them write. Each metric a
family writes still needs its row in `registry.METRICS` (a test fails for one a real run writes
without it). An undecorated function is never called. latency.json's metrics are `compute_latency`'s
(machine-dependent) and answer.* are memlab.eval's (model calls): neither is a family.

>>> from memlab.metrics.tokens import token_metrics
>>> token_metrics in families()
True
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
import inspect
import pkgutil
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from types import FunctionType
from typing import TYPE_CHECKING, Any, TypeVar

from memlab.sim.records import CallRecord, ProbeRecord, Record
from memlab.trace import Event

if TYPE_CHECKING:  # pricing defines a family, so it imports this module: no import back at run time
    from memlab.metrics.pricing import ModelPrice

Family = Callable[..., Mapping[str, Any]]
F = TypeVar("F", bound=Family)
PACKAGE = "memlab.metrics"
_MARK = "__metric_family__"


@dataclass(frozen=True)
class RunInputs:
    """What a metric family reads of a run, each field by its name as a parameter of the family's function."""

    records: Sequence[Record]
    calls: Sequence[CallRecord]
    events: Sequence[Event]
    probes: Sequence[ProbeRecord]
    rows: Sequence[Mapping[str, Any]]  # the probe table (questions.csv), from `probe_rows`
    price: ModelPrice  # pricing.model's
    window: int | None  # the context window that bounds `budget.violations`
    excluded: Sequence[str]  # question categories kept out of the overall means


def metric_family(func: F) -> F:
    """Mark `func` as a family `compute_metrics` calls (returned unchanged); it must live in `memlab.metrics`."""
    package, _, module = func.__module__.rpartition(".")
    if package != PACKAGE or module.startswith("_") or not isinstance(func, FunctionType):
        raise ValueError(
            f"@metric_family on {func.__module__}.{func.__qualname__}: compute_metrics only calls plain "
            f"functions defined in a module of {PACKAGE} (memlab/metrics/<module>.py, not a subpackage)"
        )
    setattr(func, _MARK, True)
    return func


def families() -> list[Family]:
    """Every `@metric_family` function of every module of `memlab.metrics`, by module name, then source line."""
    found: list[Family] = []
    names = sorted(m.name for m in pkgutil.iter_modules(importlib.import_module(PACKAGE).__path__))
    for name in names:
        if name.startswith("_"):  # __main__ (the docs-table command) and private helpers define no family
            continue
        module = importlib.import_module(f"{PACKAGE}.{name}")
        marked = [
            f
            for f in vars(module).values()
            if isinstance(f, FunctionType) and getattr(f, _MARK, False) and f.__module__ == module.__name__
        ]
        found.extend(sorted(marked, key=lambda f: f.__code__.co_firstlineno))
    return found


@functools.cache
def inputs(family: Family) -> tuple[str, ...]:
    """The `RunInputs` fields `family` takes (by parameter name)."""
    fields = {f.name for f in dataclasses.fields(RunInputs)}
    return tuple(p for p in inspect.signature(family).parameters if p in fields)
