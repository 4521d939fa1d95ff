"""Token metrics from call records and model-call events: what each simulated call would send.

>>> from memlab.sim.records import CallRecord
>>> calls = [CallRecord("d", "s", t, None, None, 1, 1, p, f) for t, p, f in [(1, 10, 10), (3, 20, 40)]]
>>> m = token_metrics(calls)
>>> m["tokens.prompt.total"], m["tokens.saved_ratio"]
(30, 0.4)
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

from memlab.metrics.family import metric_family
from memlab.sim.records import CallRecord
from memlab.trace import LLM_CALL, Event


@metric_family
def token_metrics(calls: Sequence[CallRecord]) -> dict[str, float | int | None]:
    """`calls`, `tokens.prompt.mean|p95|max|total` (p95 by linear interpolation), `tokens.completion.total`,
    `tokens.full_history.total` and `tokens.saved_ratio`.

    `tokens.completion.total` is what the calls produced (`CallRecord.completion_tokens`: the replies
    and the tool rounds' tool-call messages, as the runtime counts them).

    `tokens.full_history.total` is what sending the whole history at every call would have sent;
    `tokens.saved_ratio` = 1 - prompt / full-history tokens over all calls: the prompt tokens the
    strategy saved, not counting what its own model calls spent (`net_saved_ratio` does).

    A run without calls has no prompt to average: `tokens.prompt.mean`, `.p95` and `.max` are None (null in
    metrics.json; a 0 read as the smallest largest prompt, a win at the gate), as is `tokens.saved_ratio` without
    full-history tokens; counts and totals are 0.

    Args:
        calls: The run's call records.
    """
    prompt = np.array([c.prompt_tokens for c in calls], dtype=np.int64)
    full = np.array([c.full_tokens for c in calls], dtype=np.int64)
    if prompt.size == 0:
        return {
            "calls": 0,
            "tokens.prompt.mean": None,
            "tokens.prompt.p95": None,
            "tokens.prompt.max": None,
            "tokens.prompt.total": 0,
            "tokens.completion.total": 0,
            "tokens.full_history.total": 0,
            "tokens.saved_ratio": None,
        }
    full_total = int(full.sum())
    return {
        "calls": int(prompt.size),
        "tokens.prompt.mean": float(prompt.mean()),
        "tokens.prompt.p95": float(np.percentile(prompt, 95)),
        "tokens.prompt.max": int(prompt.max()),
        "tokens.prompt.total": int(prompt.sum()),
        "tokens.completion.total": sum(c.completion_tokens for c in calls),
        "tokens.full_history.total": full_total,
        "tokens.saved_ratio": 1.0 - int(prompt.sum()) / full_total if full_total else None,
    }


def budget_violations(calls: Iterable[CallRecord], context_window: int) -> int:
    """How many calls would send more tokens than the model's context window accepts.

    Args:
        calls: The run's call records.
        context_window: The model's window in tokens.
    """
    return sum(1 for c in calls if c.prompt_tokens > context_window)


@metric_family
def budget_metrics(calls: Iterable[CallRecord], window: int | None) -> dict[str, int]:
    """`budget.violations`: calls over the context `window` (0 when the window is unknown)."""
    return {"budget.violations": budget_violations(calls, window) if window else 0}


@metric_family
def aux_token_metrics(events: Iterable[Event]) -> dict[str, int]:
    """`tokens.aux.prompt|completion|total`: what the strategies' own model calls (summaries, extraction) used.

    Every LLM_CALL event counts, cached or not, so the figure is the configuration's cost
    and does not depend on what a response cache happened to hold.

    Args:
        events: Events of a run's records (`memlab.metrics.all_events`).
    """
    prompt = completion = 0
    for e in events:
        if e.kind == LLM_CALL:
            prompt += int(e.data.get("prompt_tokens") or 0)
            completion += int(e.data.get("completion_tokens") or 0)
    return {"tokens.aux.prompt": prompt, "tokens.aux.completion": completion, "tokens.aux.total": prompt + completion}


@metric_family
def net_saved_metrics(calls: Sequence[CallRecord], events: Iterable[Event]) -> dict[str, float | None]:
    """`tokens.net_saved_ratio` of the run's calls and its strategies' model calls (None without full-history
    tokens)."""
    prompt_total = sum(c.prompt_tokens for c in calls)
    full_total = sum(c.full_tokens for c in calls)
    return {
        "tokens.net_saved_ratio": net_saved_ratio(
            prompt_total, aux_token_metrics(events)["tokens.aux.total"], full_total
        )
    }


def net_saved_ratio(prompt_total: int, aux_total: int, full_total: int) -> float | None:
    """`tokens.net_saved_ratio` = 1 - (prompt + auxiliary tokens) / full-history tokens.

    What the strategy saved once the tokens its own model calls read and wrote (summaries,
    extraction) are paid for; negative when it spent more than sending the whole history would;
    None (undefined) when there are no full-history tokens to save from (a run without calls).

    Args:
        prompt_total: Prompt tokens sent over the run.
        aux_total: Tokens of the strategies' own model calls.
        full_total: Tokens sending the whole history every call would have sent.

    >>> net_saved_ratio(prompt_total=100, aux_total=250, full_total=200), net_saved_ratio(0, 40, 0)
    (-0.75, None)
    """
    return 1.0 - (prompt_total + aux_total) / full_total if full_total else None
