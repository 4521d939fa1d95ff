"""Metrics: pure functions from simulator records to flat, named numbers.

`compute_metrics` gives the deterministic metrics of a run (`metrics.json`, byte-stable for a
config and seed): those of every function marked `@metric_family` in a module of this package
(`memlab.metrics.family`). `compute_latency` gives the machine-dependent ones (`latency.json`).
Every metric is declared in `memlab.metrics.registry`; `python -m memlab.metrics --write
docs/evaluation.md` rewrites the registry's table in the docs.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from memlab.metrics import family, registry
from memlab.metrics.agent import agent_metrics, channel_recall, tool_outcomes
from memlab.metrics.bootstrap import Interval, paired_bootstrap
from memlab.metrics.events import event_metrics
from memlab.metrics.latency import LATENCY_STAGES, latency_metrics, latency_samples, reference_latency_us
from memlab.metrics.longterm import EXCLUDED_CATEGORIES, longterm_metrics, ndcg_at_k, recall_at_k
from memlab.metrics.pricing import ModelPrice, aux_cost_usd, check_tokenizer, cost_usd, model_price, price_table
from memlab.metrics.retention import mean_by_category, metric_words, probe_rows, retention_metrics
from memlab.metrics.summaries import summary_metrics
from memlab.metrics.tokens import aux_token_metrics, budget_violations, net_saved_ratio, token_metrics
from memlab.metrics.tool_orphans import tool_orphan_metrics
from memlab.sim.records import CallRecord, ProbeRecord, Record
from memlab.trace import LLM_CALL, Event

DEFAULT_PRICING_MODEL = "gpt-4o-mini"


def all_events(records: Iterable[Record]) -> Iterator[Event]:
    """Every event of every record, in the order things happened.

    Args:
        records: A run's records (memlab.sim: calls, probes, lifecycle), in replay order.
    """
    for r in records:
        yield from r.events


def compute_metrics(
    records: Iterable[Record],
    *,
    pricing_model: str = DEFAULT_PRICING_MODEL,
    context_window: int | None = None,
    probe_table: Sequence[dict[str, Any]] | None = None,
    overall_excludes: Sequence[str] = EXCLUDED_CATEGORIES,
) -> dict[str, Any]:
    """Every deterministic metric of a run, flat and keyed by its stable name.

    `context_window` (None: the pricing model's max input tokens) bounds `budget.violations`;
    `cost.usd` prices the simulated prompts at `pricing_model` and each auxiliary call at its own
    model's price (the pricing model's for offline backends);
    `cost.full_history_usd` what sending the whole history at every call would have cost.
    The metrics are those of every `@metric_family` function (`family.families()`), each given the
    `RunInputs` it names; a metric name two families write is refused.
    `probe_table` reuses rows already built by `probe_rows` (questions.csv). Question categories in
    `overall_excludes` (default: adversarial) stay out of the overall retention and recall means
    and are reported on their own.

    Args:
        records: A run's records (memlab.sim: calls, probes, lifecycle), in replay order.
        pricing_model: The model whose prices turn tokens into dollars (config key `pricing.model`).
        context_window: The window `budget.violations` counts against (None: the pricing model's).
        probe_table: The probe rows when already built (`probe_rows(records)`; None: built here).
        overall_excludes: Question categories left out of the overall means (still reported per category).
    """
    records = list(records)
    price = model_price(pricing_model)
    run = family.RunInputs(
        records=records,
        calls=[r for r in records if isinstance(r, CallRecord)],
        events=list(all_events(records)),
        probes=[r for r in records if isinstance(r, ProbeRecord)],
        rows=probe_table if probe_table is not None else probe_rows(records),
        price=price,
        window=context_window if context_window is not None else price.max_input_tokens,
        excluded=overall_excludes,
    )
    metrics: dict[str, Any] = {}
    written_by: dict[str, str] = {}
    for compute in family.families():
        found = compute(**{field: getattr(run, field) for field in family.inputs(compute)})
        owner = f"{compute.__module__}.{compute.__qualname__}"
        if twice := sorted(metrics.keys() & found.keys()):
            raise ValueError(f"metric family {owner} writes {twice}, which {written_by[twice[0]]} wrote first")
        metrics.update(found)
        written_by.update(dict.fromkeys(found, owner))
    return metrics


def compute_latency(records: Iterable[Record]) -> dict[str, float | None]:
    """The latency percentiles of a run and the reference workload timed on the same machine.

    Args:
        records: A run's records (memlab.sim: calls, probes, lifecycle), in replay order.
    """
    events = list(all_events(records))
    out = latency_metrics(latency_samples(events))
    out["latency.reference_us"] = reference_latency_us(events)
    # Served from a cache (the offline model's summary memo, litellm's disk cache): depends on the
    # process that replayed (workers, earlier jobs of a sweep), so it is kept out of metrics.json.
    out["latency.cached_calls"] = sum(1 for e in events if e.kind == LLM_CALL and e.data.get("cached"))
    return out


__all__ = [
    "DEFAULT_PRICING_MODEL",
    "EXCLUDED_CATEGORIES",
    "LATENCY_STAGES",
    "Interval",
    "ModelPrice",
    "agent_metrics",
    "all_events",
    "aux_cost_usd",
    "aux_token_metrics",
    "budget_violations",
    "channel_recall",
    "check_tokenizer",
    "compute_latency",
    "compute_metrics",
    "cost_usd",
    "event_metrics",
    "family",
    "latency_metrics",
    "latency_samples",
    "longterm_metrics",
    "mean_by_category",
    "metric_words",
    "model_price",
    "ndcg_at_k",
    "net_saved_ratio",
    "paired_bootstrap",
    "price_table",
    "probe_rows",
    "recall_at_k",
    "reference_latency_us",
    "registry",
    "retention_metrics",
    "summary_metrics",
    "token_metrics",
    "tool_orphan_metrics",
    "tool_outcomes",
]
