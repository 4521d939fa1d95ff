"""The report modules read which metrics lead each view from the registry, and title them as it does."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

from memlab.metrics import registry
from memlab.metrics.registry import VIEWS, lookup, title, view

# The report modules that lead with metrics, and the family of registry views each may name.
VIEW_MODULES = {
    "run_report": "run.",
    "comparison": "comparison.",
    "findings": "findings.",
    "recommend": "recommend.",
}
REPORT = Path(importlib.import_module("memlab.report").__file__ or "").parent


def _module_level_metric_names(source: Path) -> list[tuple[int, str]]:
    """(line, name) of each registered metric named by a string literal in the top-level statements of `source`."""
    tree = ast.parse(source.read_text(encoding="utf-8"))
    out = []
    for statement in tree.body:
        if isinstance(statement, ast.Assign | ast.AnnAssign):
            for node in ast.walk(statement):
                if isinstance(node, ast.Constant) and isinstance(node.value, str) and lookup(node.value):
                    out.append((node.lineno, node.value))
    return out


def _marked(family: str) -> set[str]:
    return {name for key, names in VIEWS.items() if key.startswith(family) for name in names}


@pytest.mark.parametrize(("module", "family"), VIEW_MODULES.items())
def test_report_modules_name_only_metrics_the_registry_marks_for_their_views(module: str, family: str) -> None:
    named = _module_level_metric_names(REPORT / f"{module}.py")
    strays = [f"{module}.py:{line} {name}" for line, name in named if name not in _marked(family)]
    assert not strays, f"named by a report module but marked by no {family}* view in the registry: {strays}"


def test_the_check_catches_a_hand_kept_list(tmp_path: Path) -> None:
    """A module that keeps its own list (here a metric no run.* view marks) fails the check above."""
    source = tmp_path / "run_report.py"
    source.write_text(
        'HEADLINE = ("calls", "tokens.prompt.p95")\nTOKENS = "calls"\n\ndef f():\n    return "cost.aux_usd"\n'
    )
    named = _module_level_metric_names(source)
    assert [n for _, n in named if n not in _marked("run.")] == ["tokens.prompt.p95"]


def test_the_lists_the_report_modules_read_are_the_registry_views() -> None:
    comparison, findings, recommend, run_report = (
        importlib.import_module(f"memlab.report.{m}") for m in ("comparison", "findings", "recommend", "run_report")
    )

    assert view(registry.V_RUN_HEADLINE) == run_report.HEADLINE
    assert view(registry.V_RUN_RETENTION) == run_report.RETENTION
    assert view(registry.V_RUN_PER_CATEGORY) == run_report.PER_CATEGORY
    assert view(registry.V_COMPARISON_PRIMARY) == comparison.PRIMARY
    assert view(registry.V_COMPARISON_QUALITY) == comparison.QUALITY
    assert view(registry.V_FINDINGS_WATCHED) == findings.WATCHED
    assert view(registry.V_RECOMMEND_TIE_BREAKERS) == recommend.TIE_BREAKERS
    assert set(run_report.CARD_NOTES) <= set(run_report.HEADLINE)


def test_every_view_names_registered_metrics_with_a_title() -> None:
    for key, names in VIEWS.items():
        assert names, key
        for name in names:
            assert lookup(name) is not None, (key, name)
    # the headline and comparison titles are the registry's short titles, never a report's own label
    assert title("tokens.net_saved_ratio") == registry.spec("tokens.net_saved_ratio").short == "net saved"
    with pytest.raises(KeyError, match=r"no metric view 'run\.nothing'; known: run\.headline"):
        view("run.nothing")
