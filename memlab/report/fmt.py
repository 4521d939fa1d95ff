"""How numbers read in reports, in the format the metric registry gives each metric.

Shares and scores as percentages, dollars, microseconds, counts with separators.

>>> fmt_value("context.evidence_retention", 0.4567), fmt_value("tokens.prompt.total", 1234567)
('45.7%', '1,234,567')
>>> fmt_delta("context.evidence_retention", -0.224963), fmt_delta("tokens.prompt.total", 118472)
('-22.5 pp', '+118,472')
"""

from __future__ import annotations

import math
from typing import Any

from memlab.metrics.registry import lookup


def is_missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def fmt_value(name: str, value: Any) -> str:
    """`value` of metric `name` for people: "—" when undefined."""
    if is_missing(value):
        return "—"
    if isinstance(value, bool) or not isinstance(value, int | float):
        return str(value)
    metric = lookup(name)
    fmt = metric.fmt if metric is not None else "number"
    if fmt == "usd":
        return "$0" if value == 0 else f"${value:.6f}" if value < 0.01 else f"${value:,.4f}"
    if fmt == "us":  # µs up to a millisecond, then ms and s: "167.5 ms" reads better than "167,501 µs"
        return (
            f"{value:,.0f} µs"
            if value < 1_000
            else f"{value / 1_000:,.1f} ms"
            if value < 1_000_000
            else f"{value / 1e6:,.2f} s"
        )
    if fmt == "percent":
        return f"{100 * value:.1f}%"
    if isinstance(value, int) or (value.is_integer() and not name.endswith((".mean", ".p95"))):
        return f"{int(value):,}"  # counts read back from a CSV with gaps come as floats
    return f"{value:,.1f}" if abs(value) >= 10 else f"{value:.3f}"


def fmt_delta(name: str, delta: float) -> str:
    """A change of metric `name` for people, signed: shares in percentage points, dollars and times in their units.

    Args:
        name: The metric's name (its registry entry gives the format).
        delta: Candidate minus baseline.
    """
    metric = lookup(name)
    fmt = metric.fmt if metric is not None else "number"
    sign = "-" if delta < 0 else "+"
    if fmt == "percent":
        return f"{sign}{abs(100 * delta):.3g} pp"
    if fmt == "usd":
        return f"{sign}${abs(delta):.4g}"
    if fmt == "us":
        return sign + fmt_value(name, abs(delta))
    return f"{delta:+,.6g}"
