"""Whether a run measured anything: a run whose every model call failed must say so, loudly.

A missing API key or a server that is down makes every summary, extraction or answer call fail;
the strategies fall back and the run still writes numbers, which then describe the fallbacks and
not the configuration. `measurement_warnings` names each such case; the run prints them on
stderr, the report puts them in a banner at the top, and `strict=true` turns them into an error.

>>> measurement_warnings({"llm.calls": 4, "llm.failures": 4})[0][:40]
'every one of the 4 model calls the strat'
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def _count(metrics: Mapping[str, Any], name: str) -> int:
    value = metrics.get(name)
    return int(value) if isinstance(value, int | float) and value == value else 0


def measurement_warnings(metrics: Mapping[str, Any]) -> list[str]:
    """One sentence per part of the run that measured nothing because all its model calls failed."""
    out = []
    calls, failures = _count(metrics, "llm.calls"), _count(metrics, "llm.failures")
    if calls and failures >= calls:
        out.append(
            f"every one of the {calls:,} model calls the strategies made failed (llm.failures = llm.calls): "
            "summaries and extraction are fallbacks, not the configured model's work"
        )
    asked, failed = _count(metrics, "answer.questions"), _count(metrics, "answer.failures")
    if asked and failed >= asked:
        out.append(
            f"every one of the {asked:,} answer calls failed (answer.failures = answer.questions): no answer was scored"
        )
    return out
