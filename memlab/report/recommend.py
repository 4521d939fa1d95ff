"""`memlab recommend`: the best configuration of a sweep under a token budget, and why.

Among the runs that finished and whose `budget_metric` (default `tokens.prompt.mean`, the
prompt a call sends) is at most the budget, configurations that cost more than sending the
whole history (`tokens.net_saved_ratio` below 0, or `cost.usd` above `cost.full_history_usd`:
their summarizers read more than they save) are set aside whenever one that does not meets the
budget. The best of the rest has the highest `by` metric (default: evidence retention; the
lowest for a metric the registry says is better lower), ties broken by long-term recall@10, then answer
coverage, then lower cost, then fewer net tokens. A choice that sends less than 90% of the budget
says so, with its configured budget and what would spend the rest (`memlab.report.budget`): the
exact counter, or a budgeted configuration over the budget run again at it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd

from memlab.errors import MemlabError
from memlab.metrics.registry import HIGHER, LOWER, NONE, V_RECOMMEND_TIE_BREAKERS, V_RECOMMEND_WASTE, direction, view
from memlab.report.budget import UNUSED_BELOW, budget_from_row, unused_hint, used_line
from memlab.report.fmt import fmt_value, is_missing

TIE_BREAKERS = view(V_RECOMMEND_TIE_BREAKERS)
MEASURED_SHOWN = 12  # metrics a recommendation without its --by metric lists as the choices
PROMPT_TOKENS = "tokens.prompt."  # what a context budget bounds: the "uses N% of the budget" line is theirs alone
NET, COST, FULL_COST = view(V_RECOMMEND_WASTE)


@dataclass(frozen=True)
class Recommendation:
    """The chosen row (None if nothing fits) and the lines that explain the choice.

    Args:
        best: The chosen row (None: nothing fits the budget).
        reasons: The lines that explain the choice.
    """

    best: dict[str, Any] | None
    reasons: list[str]


def _num(value: Any) -> float:
    return float("-inf") if is_missing(value) else float(value)


def metric_columns(frame: pd.DataFrame) -> list[str]:
    """The comparison table's metrics that have a better direction (what `by` and `budget_metric` may name)."""
    return sorted(str(c) for c in frame.columns if direction(str(c)) != NONE)


def check_metric(frame: pd.DataFrame, option: str, name: str) -> None:
    """A user error naming the valid metrics when `name` is not one of the table's."""
    valid = metric_columns(frame)
    if name not in valid:
        raise MemlabError(f"{option} {name!r} is not a metric of these runs; valid metrics: {', '.join(valid)}")


def wasteful(row: dict[str, Any]) -> bool:
    """Spends more than sending the full history would: net tokens or cost above the full history's."""
    net, cost, full = _num(row.get(NET)), _num(row.get(COST)), _num(row.get(FULL_COST))
    return (net != float("-inf") and net < 0) or (full != float("-inf") and cost > full)


def _describe(row: dict[str, Any], names: Sequence[str]) -> str:
    return ", ".join(f"{n} {fmt_value(n, row.get(n))}" for n in names if not is_missing(row.get(n)))


def _configuration(row: dict[str, Any], spelled: Mapping[str, str]) -> str:
    """The row's label as overrides to paste: without the settings its strategy ignored (`context=trim
    context.max_tokens=1000` is `context=trim`), each key as the command line wrote it (`spelled`: the label's
    `experiment/peers=trim` is `+experiment/peers=trim`)."""
    ignored = set(str(row.get("ignored") or "").split())
    parts = (part.partition("=") for part in str(row["label"]).split())
    return " ".join(f"{spelled.get(key, key)}={value}" for key, _, value in parts if key not in ignored)


def recommend(
    frame: pd.DataFrame,
    budget: float,
    *,
    budget_metric: str = "tokens.prompt.mean",
    by: str = "context.evidence_retention",
    spelled: Mapping[str, str] | None = None,
) -> Recommendation:
    """Pick from a comparison table (`comparison_table`) the best configuration within `budget`.

    Args:
        frame: A comparison table (`comparison_table`).
        budget: The most `budget_metric` may be.
        budget_metric: The metric the budget bounds.
        by: The metric the best configuration is best in.
        spelled: Each label key as the runs' command lines wrote it (`override_spellings`), so that the pick
            and the runners-up read as overrides to paste.
    """
    spelled = spelled or {}
    check_metric(frame, "--by", by)
    check_metric(frame, "--budget-metric", budget_metric)
    rows: list[dict[str, Any]] = [{str(k): v for k, v in r.items()} for r in frame.to_dict("records")]
    ok = [r for r in rows if r["status"] == "ok" and not is_missing(r.get(budget_metric))]
    if not ok:
        return Recommendation(None, [f"no finished run reports {budget_metric}"])
    within = [r for r in ok if float(r[budget_metric]) <= budget]
    over = [r for r in ok if float(r[budget_metric]) > budget]
    if not within:
        cheapest = min(ok, key=lambda r: float(r[budget_metric]))
        return Recommendation(
            None,
            [
                f"no configuration keeps {budget_metric} <= {budget:g}",
                f"the cheapest is {cheapest['label']} at {fmt_value(budget_metric, cheapest[budget_metric])}",
            ],
        )
    if all(is_missing(r.get(by)) for r in within):  # a pick by a metric no run measured is a pick by tie-breakers
        measured = [  # what a pick maximizes: shares and scores, not counts of failures or latencies
            m
            for m in metric_columns(frame)
            if direction(m) == HIGHER and not m.startswith("latency.") and any(not is_missing(r.get(m)) for r in within)
        ]
        choices = ", ".join(measured[:MEASURED_SHOWN]) + (", ..." if len(measured) > MEASURED_SHOWN else "")
        return Recommendation(
            None,
            [
                f"no configuration within the budget measured {by} (a dataset without evidence turns, say "
                f"tau-bench, measures no retention); choose --by among what they measured: {choices}"
            ],
        )
    costly = [r for r in within if wasteful(r)]
    pool = [r for r in within if not wasteful(r)] or within
    sign = 1.0 if direction(by) == LOWER else -1.0
    keys = [t for t in TIE_BREAKERS if t != by]
    ranked = sorted(
        pool,
        key=lambda r: (
            sign * _num(r.get(by)) if not is_missing(r.get(by)) else float("inf"),
            *(-_num(r.get(k)) for k in keys),
            _num(r.get(COST)),
            -_num(r.get(NET)),
            str(r["label"]),
        ),
    )
    best = ranked[0]
    shown = (budget_metric, NET, COST)
    pick = _configuration(best, spelled)
    reasons = [f"{pick}: {by} {fmt_value(by, best.get(by))} at {_describe(best, shown)} (budget {budget:g})"]
    configured = budget_from_row(best)
    if configured is not None:
        reasons[0] += f"; configured context.max_tokens {configured}"
    if budget_metric.startswith(PROMPT_TOKENS) and float(best[budget_metric]) < UNUSED_BELOW * budget:
        line = f"  it {used_line(float(best[budget_metric]), budget)}: {unused_hint(configured, budget)}"
        resizable = [str(r["label"]) for r in over if budget_from_row(r) is not None]
        if resizable:
            line += f"; {', '.join(resizable)} may fit at context.max_tokens={budget:.0f} context.counter=exact"
        reasons.append(line)
    # The runners-up, each configuration once: runs that differ only in settings their strategy ignored are one.
    runners_up: dict[str, dict[str, Any]] = {}
    for r in ranked[1:]:
        if len(runners_up) < 2 and _configuration(r, spelled) not in (pick, *runners_up):
            runners_up[_configuration(r, spelled)] = r
    reasons += [
        f"  then {label}: {by} {fmt_value(by, r.get(by))} at {_describe(r, shown)}" for label, r in runners_up.items()
    ]
    if costly and pool is not within:
        reasons.append(
            "set aside, costing more than sending the full history: "
            + ", ".join(f"{r['label']} ({_describe(r, (NET, COST))})" for r in costly)
        )
    elif costly:
        reasons.append("warning: every configuration within budget costs more than sending the full history")
    if over:
        reasons.append(
            "over budget: " + ", ".join(f"{r['label']} ({fmt_value(budget_metric, r[budget_metric])})" for r in over)
        )
    failed = [str(r["label"]) for r in rows if r["status"] == "failed"]
    if failed:
        reasons.append("failed: " + ", ".join(failed))
    return Recommendation(best, reasons)
