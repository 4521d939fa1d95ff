"""Summary metrics from SUMMARY events, per layer and in total: how many, how much shorter, how many rejected.

Every layer summarizes through `memlab.summary.write_summary`, which emits one typed
`SummaryEvent` per summary asked of a model, so the same definitions hold on every layer:

- `summary.<layer>.count`: summaries asked (layer ``context``, ``memory`` or ``compressor``);
- `summary.<layer>.accepted`: those used (non-empty and not longer, in tokens, than their source);
- `summary.<layer>.violations`: summaries returned with more tokens than their source (the
  design document: a summary "不应比原文更长"; one exactly as long is accepted, not a violation);
- `summary.<layer>.empty` / `.failed`: empty summaries / model calls that raised;
- `summary.<layer>.fallbacks`: summaries not used (the caller took its documented fallback);
- `summary.<layer>.ratio.mean|max`: summary over source tokens, over every summary returned
  (accepted or not, so that an oversized one shows in the max); None when none was returned.

`summary.count|accepted|violations|empty|failed|fallbacks|ratio.mean|ratio.max` are the totals.

>>> from memlab.trace import Event
>>> m = summary_metrics([Event("summary", {"layer": "memory", "source_tokens": 100, "summary_tokens": 25})])
>>> m["summary.memory.ratio.mean"], m["summary.ratio.mean"], m["summary.context.count"]
(0.25, 0.25, 0)
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from memlab.metrics.family import metric_family
from memlab.trace import SUMMARY, Event

LAYERS = ("context", "memory", "compressor")
COUNTS = ("count", "accepted", "violations", "empty", "failed", "fallbacks")


def _layer_metrics(prefix: str, events: list[Event]) -> dict[str, float | int | None]:
    counts = dict.fromkeys(COUNTS, 0)
    ratios = []
    for e in events:
        d = e.data
        counts["count"] += 1
        source, made = int(d.get("source_tokens") or 0), d.get("summary_tokens")
        accepted = bool(d.get("accepted", made is not None and made <= source))
        counts["accepted"] += accepted
        counts["fallbacks"] += not accepted
        if made is None:
            counts["failed"] += 1
            continue
        counts["empty"] += d.get("reason") == "empty_summary"
        counts["violations"] += int(made) > source
        if source > 0:
            ratios.append(int(made) / source)
    r = np.array(ratios, dtype=np.float64)
    out: dict[str, float | int | None] = {f"{prefix}.{k}": v for k, v in counts.items()}
    out[f"{prefix}.ratio.mean"] = float(r.mean()) if r.size else None
    out[f"{prefix}.ratio.max"] = float(r.max()) if r.size else None
    return out


@metric_family
def summary_metrics(events: Iterable[Event]) -> dict[str, float | int | None]:
    """`summary.*` in total and `summary.<layer>.*` for each layer (see the module docstring).

    Args:
        events: Events of a run's records (`memlab.metrics.all_events`).
    """
    summaries = [e for e in events if e.kind == SUMMARY]
    out = _layer_metrics("summary", summaries)
    for layer in LAYERS:
        out.update(_layer_metrics(f"summary.{layer}", [e for e in summaries if e.data.get("layer") == layer]))
    return out
