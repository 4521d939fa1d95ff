"""Token metrics from call records: how much each simulated call would send."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from memlab.sim.records import CallRecord


def token_metrics(calls: Sequence[CallRecord]) -> dict[str, float]:
    """`calls` and `tokens.prompt.mean|p95|max|total` (p95 by linear interpolation, numpy's default)."""
    prompt = np.array([c.prompt_tokens for c in calls], dtype=np.int64)
    if prompt.size == 0:
        return {
            "calls": 0,
            "tokens.prompt.mean": 0.0,
            "tokens.prompt.p95": 0.0,
            "tokens.prompt.max": 0,
            "tokens.prompt.total": 0,
        }
    return {
        "calls": int(prompt.size),
        "tokens.prompt.mean": float(prompt.mean()),
        "tokens.prompt.p95": float(np.percentile(prompt, 95)),
        "tokens.prompt.max": int(prompt.max()),
        "tokens.prompt.total": int(prompt.sum()),
    }
