"""Metric families register themselves: `families()` finds every `@metric_family` function of the package."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from memlab.metrics import family
from memlab.metrics.family import metric_family
from memlab.metrics.tokens import token_metrics

TOY = "toy_metrics"
# Two modules of a toy metrics package: b.py defines its families out of alphabetical order,
# holds an undecorated function and re-exports a.py's family.
TOY_MODULES = {
    "a.py": "from memlab.metrics.family import metric_family\n\n\n@metric_family\ndef first(calls):\n    return {}\n",
    "b.py": "from memlab.metrics.family import metric_family\nfrom toy_metrics.a import first\n\n\n"
    "@metric_family\ndef zeta(calls):\n    return {}\n\n\n"
    "def helper(calls):\n    return {}\n\n\n"
    "@metric_family\ndef alpha(calls):\n    return {}\n",
}


@pytest.fixture
def toy_package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """`toy_metrics` on the path, standing for `memlab.metrics` (removed from sys.modules afterwards)."""
    (tmp_path / TOY).mkdir()
    (tmp_path / TOY / "__init__.py").write_text("", encoding="utf-8")
    for name, text in TOY_MODULES.items():
        (tmp_path / TOY / name).write_text(text, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(family, "PACKAGE", TOY)
    yield
    for name in [n for n in sys.modules if n == TOY or n.startswith(f"{TOY}.")]:
        del sys.modules[name]


def test_families_are_found_by_module_then_source_line(toy_package: None) -> None:
    assert [f"{f.__module__}.{f.__name__}" for f in family.families()] == [
        "toy_metrics.a.first",
        "toy_metrics.b.zeta",
        "toy_metrics.b.alpha",
    ]


def test_memlab_families_are_each_found_once_in_order() -> None:
    found = family.families()
    assert token_metrics in found and len(set(found)) == len(found) > 10
    where = [(f.__module__, f.__code__.co_firstlineno) for f in found]
    assert where == sorted(where) and all(m.startswith("memlab.metrics.") for m, _ in where)


def test_a_family_outside_the_package_is_refused() -> None:
    def elsewhere(calls: object) -> dict[str, int]:
        return {}

    with pytest.raises(ValueError, match=r"test_family\.test_a_family_outside.*elsewhere.*memlab/metrics/<module>\.py"):
        metric_family(elsewhere)
