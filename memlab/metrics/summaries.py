"""Summary metrics from SUMMARY events: how many, how much shorter, how many were not shorter.

>>> from memlab.trace import Event
>>> summary_metrics([Event("summary", {"source_tokens": 100, "summary_tokens": 25})])["summary.ratio.mean"]
0.25
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from memlab.trace import SUMMARY, Event


def summary_metrics(events: Iterable[Event]) -> dict[str, float | int | None]:
    """`summary.count`, `summary.ratio.mean|max` (summary over source tokens) and `summary.violations`.

    A violation is a summary whose tokens are not fewer than its source's: every summary
    made counts, accepted or rejected, since a rejected one still cost a model call.
    """
    count, violations, ratios = 0, 0, []
    for e in events:
        if e.kind != SUMMARY:
            continue
        count += 1
        source, summary = int(e.data.get("source_tokens") or 0), int(e.data.get("summary_tokens") or 0)
        if source > 0:
            ratios.append(summary / source)
        violations += summary >= source
    r = np.array(ratios, dtype=np.float64)
    return {
        "summary.count": count,
        "summary.ratio.mean": float(r.mean()) if r.size else None,
        "summary.ratio.max": float(r.max()) if r.size else None,
        "summary.violations": violations,
    }
