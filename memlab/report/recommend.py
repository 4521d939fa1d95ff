"""`memlab recommend`: the best configuration of a sweep under a token budget, and why.

Among the runs that finished and whose `budget_metric` (default `tokens.prompt.mean`) is at
most the budget, the best is the one with the highest `by` metric (default: evidence retention),
ties broken by long-term recall@10, then answer coverage, then fewer tokens.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pandas as pd

from memlab.report.fmt import fmt_value, is_missing

TIE_BREAKERS = ("longterm.recall@10", "context.answer_coverage")


@dataclass(frozen=True)
class Recommendation:
    """The chosen row (None if nothing fits) and the lines that explain the choice."""

    best: dict[str, Any] | None
    reasons: list[str]


def _num(value: Any) -> float:
    return float("-inf") if is_missing(value) else float(value)


def recommend(
    frame: pd.DataFrame,
    budget: float,
    *,
    budget_metric: str = "tokens.prompt.mean",
    by: str = "context.evidence_retention",
) -> Recommendation:
    """Pick from a comparison table (`comparison_table`) the best configuration within `budget`."""
    rows: list[dict[str, Any]] = [{str(k): v for k, v in r.items()} for r in frame.to_dict("records")]
    ok = [r for r in rows if r["status"] == "ok" and not is_missing(r.get(budget_metric))]
    if not ok:
        return Recommendation(None, [f"no finished run reports {budget_metric}"])
    within = [r for r in ok if float(r[budget_metric]) <= budget]
    over = [r for r in ok if float(r[budget_metric]) > budget]
    if not within:
        cheapest = min(ok, key=lambda r: float(r[budget_metric]))
        reasons = [f"no configuration keeps {budget_metric} <= {budget:g}"]
        if cheapest is not None:
            reasons.append(
                f"the cheapest is {cheapest['label']} at {fmt_value(budget_metric, cheapest[budget_metric])}"
            )
        return Recommendation(None, reasons)
    keys = [by, *[t for t in TIE_BREAKERS if t != by]]
    ranked = sorted(
        within,
        key=lambda r: (*(-_num(r.get(k)) for k in keys), _num(r.get(budget_metric)), str(r["label"])),
    )
    best = ranked[0]
    reasons = [
        f"{best['label']}: {by} {fmt_value(by, best.get(by))} at {budget_metric} "
        f"{fmt_value(budget_metric, best.get(budget_metric))} (budget {budget:g})"
    ]
    reasons += [
        f"  then {r['label']}: {by} {fmt_value(by, r.get(by))} at {fmt_value(budget_metric, r.get(budget_metric))}"
        for r in ranked[1:3]
    ]
    if over:
        reasons.append(
            "over budget: " + ", ".join(f"{r['label']} ({fmt_value(budget_metric, r[budget_metric])})" for r in over)
        )
    failed = [str(r["label"]) for r in rows if r["status"] == "failed"]
    if failed:
        reasons.append("failed: " + ", ".join(failed))
    return Recommendation(best, reasons)
