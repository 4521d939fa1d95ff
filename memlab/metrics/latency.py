"""Latency percentiles in microseconds per stage and per part of a stage, from trace events.

They vary from machine to machine and run to run, so they are written to `latency.json`,
never to the byte-stable `metrics.json`; `latency.reference_us` is the median time of a fixed
workload timed throughout the replay (`memlab.sim.reference`), so that comparisons can use
ratios instead of raw microseconds.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable

import numpy as np

from memlab.sim.reference import reference_us
from memlab.trace import CONTEXT_APPLY, LATENCY_REFERENCE, LLM_CALL, LONGTERM_EXTRACT, LONGTERM_RETRIEVE, Event

# Stage name in the metric -> the event kind whose `latency_us` times it. `model`: the strategies' model calls
# (summaries, extraction, the tool policy's) that no cache answered, failed ones included (a timeout is slow too).
LATENCY_STAGES = {
    "context": CONTEXT_APPLY,
    "retrieval": LONGTERM_RETRIEVE,
    "extract": LONGTERM_EXTRACT,
    "model": LLM_CALL,
}
# Parts of a stage -> (event kind, field): retrieval splits into the query (embed, search, re-rank)
# and the index rebuilds (only searches that rebuilt one have a sample); extraction into the model
# call and the storage of what it found.
LATENCY_PARTS = {
    "retrieval.query": (LONGTERM_RETRIEVE, "query_us"),
    "retrieval.index_build": (LONGTERM_RETRIEVE, "index_build_us"),
    "extract.model": (LONGTERM_EXTRACT, "model_us"),
    "extract.store": (LONGTERM_EXTRACT, "store_us"),
}
REFERENCE_REPEATS = 5  # samples timed at the end of a run whose replay took none


def latency_samples(events: Iterable[Event]) -> dict[str, list[int]]:
    """Each stage's and each part's values, in event order.

    Args:
        events: Events of a run's records (`memlab.metrics.all_events`).
    """
    fields = [(stage, kind, "latency_us") for stage, kind in LATENCY_STAGES.items()]
    fields += [(part, kind, field) for part, (kind, field) in LATENCY_PARTS.items()]
    samples: dict[str, list[int]] = {name: [] for name, _, _ in fields}
    for e in events:
        if e.kind == LLM_CALL and e.data.get("cached"):  # a cache's answer times no model
            continue
        for name, kind, field in fields:
            if e.kind == kind and e.data.get(field) is not None:
                samples[name].append(int(e.data[field]))
    return samples


def latency_metrics(samples: dict[str, list[int]]) -> dict[str, float | None]:
    """`latency.<stage>.p50_us|p95_us` and `latency.<stage>.<part>_p50_us|_p95_us` (None when never timed).

    Args:
        samples: Each stage's and part's timings in microseconds (`latency_samples`).

    >>> m = latency_metrics({"context": [10, 20, 30], "retrieval.query": [5, 7]})
    >>> m["latency.context.p50_us"], m["latency.retrieval.query_p50_us"], m["latency.retrieval.p50_us"]
    (20.0, 6.0, None)
    """
    out: dict[str, float | None] = {}
    names = {stage: f"latency.{stage}." for stage in LATENCY_STAGES}
    names.update({part: f"latency.{part}_" for part in LATENCY_PARTS})
    for name, prefix in names.items():
        values = np.array(samples.get(name, []), dtype=np.float64)
        out[f"{prefix}p50_us"] = float(np.percentile(values, 50)) if values.size else None
        out[f"{prefix}p95_us"] = float(np.percentile(values, 95)) if values.size else None
    return out


def reference_latency_us(events: Iterable[Event] = ()) -> float:
    """The median of the reference workload's samples among `events`; without any, of 5 timed now.

    Args:
        events: Events of a run's records (`memlab.metrics.all_events`).
    """
    samples = [e.data["latency_us"] for e in events if e.kind == LATENCY_REFERENCE]
    return float(statistics.median(samples or [reference_us() for _ in range(REFERENCE_REPEATS)]))
