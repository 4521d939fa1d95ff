"""Reports: run reports, sweep comparisons with plots, recommendations, the regression gate, quoted figures."""

from memlab.report.ablation import AblationVariant, ablation_files, ablation_markdown, ablation_table, question_scores
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
