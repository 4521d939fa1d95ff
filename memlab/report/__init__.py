"""Reports: a run's report, sweep comparisons with plots, recommendations, the regression gate."""

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
    "RunData",
    "calls_table",
    "find_runs",
    "is_run_dir",
    "latency_table",
    "load_run",
    "questions_table",
    "run_files",
    "run_report_html",
    "run_report_md",
    "write_error",
]
