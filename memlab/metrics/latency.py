"""Latency percentiles in microseconds per stage, from the `latency_us` of trace events.

They vary from machine to machine and run to run, so they are written to `latency.json`,
never to the byte-stable `metrics.json`; `latency.reference_us` times a fixed workload in the
same process so that comparisons can use ratios instead of raw microseconds.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Iterable

import numpy as np

from memlab.tokens import get_counter
from memlab.trace import CONTEXT_APPLY, LONGTERM_EXTRACT, LONGTERM_RETRIEVE, Event

# Stage name in the metric -> the event kind that times it.
LATENCY_STAGES = {"context": CONTEXT_APPLY, "retrieval": LONGTERM_RETRIEVE, "extract": LONGTERM_EXTRACT}
REFERENCE_REPEATS = 5
REFERENCE_TEXTS = 200


def latency_samples(events: Iterable[Event]) -> dict[str, list[int]]:
    """Each stage's `latency_us` values, in event order."""
    by_kind = {kind: stage for stage, kind in LATENCY_STAGES.items()}
    samples: dict[str, list[int]] = {stage: [] for stage in LATENCY_STAGES}
    for e in events:
        stage = by_kind.get(e.kind)
        if stage is not None and e.data.get("latency_us") is not None:
            samples[stage].append(int(e.data["latency_us"]))
    return samples


def latency_metrics(samples: dict[str, list[int]]) -> dict[str, float | None]:
    """`latency.<stage>.p50_us|p95_us` (None for a stage that never ran).

    >>> latency_metrics({"context": [10, 20, 30], "retrieval": []})["latency.context.p50_us"]
    20.0
    """
    out: dict[str, float | None] = {}
    for stage in LATENCY_STAGES:
        values = np.array(samples.get(stage, []), dtype=np.float64)
        out[f"latency.{stage}.p50_us"] = float(np.percentile(values, 50)) if values.size else None
        out[f"latency.{stage}.p95_us"] = float(np.percentile(values, 95)) if values.size else None
    return out


def reference_latency_us() -> float:
    """Median time of a fixed workload on this machine: tokenizing 200 short texts with cl100k_base."""
    counter = get_counter("cl100k_base")
    texts = [
        f"reference message {i}: the quick brown fox jumps over the lazy dog. " * 4 for i in range(REFERENCE_TEXTS)
    ]
    counter.count_text(texts[0])  # load the encoding outside the timing
    timings = []
    for _ in range(REFERENCE_REPEATS):
        start = time.perf_counter_ns()
        for text in texts:
            counter.count_text(text)
        timings.append((time.perf_counter_ns() - start) / 1000)
    return float(statistics.median(timings))
