"""Metrics: pure functions from simulator records to flat, named numbers."""

from collections.abc import Iterable

from memlab.metrics.tokens import token_metrics
from memlab.sim.records import CallRecord, Record


def compute_metrics(records: Iterable[Record]) -> dict[str, float]:
    """Every metric of a run, flat and keyed by its stable name."""
    records = list(records)
    calls = [r for r in records if isinstance(r, CallRecord)]
    return token_metrics(calls)


__all__ = ["compute_metrics", "token_metrics"]
