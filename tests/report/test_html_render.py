"""A run's report.html renders in headless Chromium (the demo's pages are checked in test_demo.py)."""

from __future__ import annotations

from pathlib import Path

from chromium import assert_rendered, screenshot


def test_run_report_renders(make_run, tmp_path: Path) -> None:
    run = make_run(tmp_path / "run", keep=6, summarize=True)
    assert_rendered(screenshot(run / "report.html", tmp_path / "report.png"))
