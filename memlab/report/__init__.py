"""Reports: run reports, sweep comparisons with plots, recommendations, the regression gate, quoted figures.

The names below are imported on first use: the report code loads pandas and matplotlib (~0.5-1 s), and a
submodule that needs neither (`memlab.report.callback`, which Hydra instantiates when any run starts) must
not pay for them.
"""

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from memlab.report.ablation import (
        AblationVariant,
        ablation_files,
        ablation_markdown,
        ablation_table,
        question_scores,
    )
    from memlab.report.comparison import comparison_table, pareto_front, run_labels, write_comparison
    from memlab.report.figures import check_docs, rewrite_docs
    from memlab.report.gate import compare_sides, failed, format_rows, load_rules, load_side
    from memlab.report.recommend import Recommendation, recommend
    from memlab.report.run_report import run_report_html, run_report_md
    from memlab.report.rundata import (
        RunData,
        calls_table,
        find_runs,
        is_run_dir,
        latency_table,
        load_run,
        questions_table,
        run_files,
        write_error,
    )

_MODULES = {
    "ablation": ("AblationVariant", "ablation_files", "ablation_markdown", "ablation_table", "question_scores"),
    "comparison": ("comparison_table", "pareto_front", "run_labels", "write_comparison"),
    "figures": ("check_docs", "rewrite_docs"),
    "gate": ("compare_sides", "failed", "format_rows", "load_rules", "load_side"),
    "recommend": ("Recommendation", "recommend"),
    "run_report": ("run_report_html", "run_report_md"),
    "rundata": (
        "RunData",
        "calls_table",
        "find_runs",
        "is_run_dir",
        "latency_table",
        "load_run",
        "questions_table",
        "run_files",
        "write_error",
    ),
}
_HOME = {name: module for module, names in _MODULES.items() for name in names}


def __getattr__(name: str) -> Any:
    """A public name, imported from its module on first use."""
    module = _HOME.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{module}"), name)


__all__ = [
    "AblationVariant",
    "Recommendation",
    "RunData",
    "ablation_files",
    "ablation_markdown",
    "ablation_table",
    "calls_table",
    "check_docs",
    "compare_sides",
    "comparison_table",
    "failed",
    "find_runs",
    "format_rows",
    "is_run_dir",
    "latency_table",
    "load_rules",
    "load_run",
    "load_side",
    "pareto_front",
    "question_scores",
    "questions_table",
    "recommend",
    "rewrite_docs",
    "run_files",
    "run_labels",
    "run_report_html",
    "run_report_md",
    "write_comparison",
    "write_error",
]
