"""How numbers read in reports: counts with separators, shares as percentages, dollars, microseconds.

>>> fmt_value("context.evidence_retention", 0.4567), fmt_value("tokens.prompt.total", 1234567)
('45.7%', '1,234,567')
"""

from __future__ import annotations

import math
from typing import Any

# Metrics that are shares in [0, 1]: shown as percentages.
SHARE_PREFIXES = (
    "context.",
    "longterm.recall@",
    "longterm.ndcg@",
    "tokens.saved_ratio",
    "tokens.net_saved_ratio",
    "answer.",
    "summary.ratio",
)


def is_missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def fmt_value(name: str, value: Any) -> str:
    """`value` of metric `name` for people: "—" when undefined."""
    if is_missing(value):
        return "—"
    if isinstance(value, bool) or not isinstance(value, int | float):
        return str(value)
    if name.startswith("cost.") and name.endswith("usd"):
        return "$0" if value == 0 else f"${value:.6f}" if value < 0.01 else f"${value:,.4f}"
    if name.endswith("_us"):
        return f"{value:,.0f} µs"
    if name.startswith(SHARE_PREFIXES) and not name.endswith((".count", ".failures")):
        return f"{100 * value:.1f}%"
    if isinstance(value, int) or (value.is_integer() and not name.endswith((".mean", ".p95"))):
        return f"{int(value):,}"  # counts read back from a CSV with gaps come as floats
    return f"{value:,.1f}" if abs(value) >= 10 else f"{value:.3f}"
