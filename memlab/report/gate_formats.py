"""`memlab compare --format json|junit`: the gate's rows for CI systems (the table is `gate.format_rows`).

JSON: ``{"passed": bool, "counts": {...}, "warnings": [...], "rows": [{config, metric, baseline, candidate, status,
note}]}``, the warnings what the two sides did not share (different data, tokenizer or pricing model).
JUnit XML: one test suite per configuration, one test case per metric, a ``<failure>`` for each
regression, unexplained change or missing metric, so Jenkins, GitLab and GitHub show them as failed tests.
"""

from __future__ import annotations

import json
import math
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from dataclasses import asdict
from typing import Any

from memlab.report.fmt import fmt_value
from memlab.report.gate import FAILING, Row, failed


def _plain(value: Any) -> Any:
    return None if isinstance(value, float) and not math.isfinite(value) else value  # JSON has no NaN nor Infinity


def rows_json(rows: Sequence[Row], warnings: Sequence[str] = ()) -> str:
    counts: dict[str, int] = {}
    for r in rows:
        counts[r.status] = counts.get(r.status, 0) + 1
    data = {
        "passed": not failed(rows),
        "counts": counts,
        "warnings": list(warnings),  # what the sides did not share (`gate.provenance_notes`)
        "rows": [{k: _plain(v) for k, v in asdict(r).items()} for r in rows],
    }
    return json.dumps(data, indent=2, ensure_ascii=False, default=str) + "\n"


def rows_junit(rows: Sequence[Row], warnings: Sequence[str] = ()) -> str:
    suites = ET.Element("testsuites", name="memlab compare")
    by_config: dict[str, list[Row]] = {}
    for r in rows:
        by_config.setdefault(r.config or "run", []).append(r)
    for config, group in by_config.items():
        failures = [r for r in group if r.status in FAILING]
        suite = ET.SubElement(
            suites, "testsuite", name=config, tests=str(len(group)), failures=str(len(failures)), errors="0"
        )
        if warnings:  # each suite's properties: what the sides did not share
            properties = ET.SubElement(suite, "properties")
            for note in warnings:
                ET.SubElement(properties, "property", name="memlab.warning", value=note)
        for r in group:
            case = ET.SubElement(suite, "testcase", classname=config, name=r.metric)
            text = (
                f"{r.status}: baseline {fmt_value(r.metric, r.baseline)}, candidate {fmt_value(r.metric, r.candidate)}"
            )
            if r.note:
                text += f" ({r.note})"
            if r.status in FAILING:
                ET.SubElement(case, "failure", message=text, type=r.status)
            else:
                ET.SubElement(case, "system-out").text = text
    suites.set("tests", str(len(rows)))
    suites.set("failures", str(sum(r.status in FAILING for r in rows)))
    ET.indent(suites)
    return ET.tostring(suites, encoding="unicode", xml_declaration=True) + "\n"
