"""Counts over trace events: model calls and failures, fallbacks, memory edits, long-term memories.

>>> from memlab.trace import Event
>>> event_metrics([Event("llm.call", {"failed": True}), Event("fallback", {})])["llm.failures"]
1
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Mapping
from typing import Any

from memlab.metrics.family import metric_family
from memlab.trace import (
    FALLBACK,
    LLM_CALL,
    LONGTERM_EXTRACT,
    LONGTERM_SKIP,
    MEMORY_CLEANUP,
    MEMORY_COMPRESS,
    Event,
)

MEMORY_EDITS = (MEMORY_COMPRESS, MEMORY_CLEANUP)


def call_retries(call: Mapping[str, Any]) -> int:
    """The retries one LLM_CALL event's call made: its ``attempts`` beyond the first (0 when it has none recorded).

    >>> call_retries({"attempts": 3}), call_retries({"attempts": 0, "cached": True}), call_retries({})
    (2, 0, 0)
    """
    return max(0, int(call.get("attempts") or 1) - 1)


@metric_family
def event_metrics(events: Iterable[Event]) -> dict[str, int | float | None]:
    """Counts: `llm.*`, `memory.cleanup.*`, `memory.compress.*`, `memory.archived`, `longterm.*`.

    - `llm.calls|failures|fallbacks`: LLM_CALL events, those that failed, FALLBACK events;
    - `llm.truncated`: LLM_CALL events whose reply stopped at its token budget (``truncated``);
    - `llm.retries`: the requests LLM_CALL events sent beyond their first (``attempts`` - 1, `call_retries`);
    - `memory.cleanup.count|items.before|items.after`: runs of the Memory layer's cleanup service
      (MEMORY_CLEANUP) and the stored messages before and after them, summed;
    - `memory.compress.count|items.before|items.after`: AgentMemory compressions that changed the
      memory (MEMORY_COMPRESS) and the items before and after them, summed; kept apart from the
      cleanup's, so that `memory=...` and `agent_memory=hybrid` in one run are reported separately;
    - `memory.compress.summary_tokens.mean`: tokens of the summary each compression left (None
      without compressions);
    - `memory.archived`: items archived (kept, no longer served) by any event that reports `archived`;
    - `longterm.memories` / `longterm.duplicates`: memories saved by extraction and how many of
      them repeat one already stored (LONGTERM_EXTRACT `memories` / `duplicates`);
    - `longterm.skipped`: turns that extraction skipped before any model call (LONGTERM_SKIP events);
    - `longterm.archived.max_items`: memories the per-user cap (`max_items`) archived after an
      extraction or a `memory_save` (LONGTERM_EXTRACT and LONGTERM_TOOL `archived_by_cap`);
    - `longterm.extract.failures`: extractions that failed (the model raised, or a background job did).

    Args:
        events: Events of a run's records (`memlab.metrics.all_events`).
    """
    out = dict.fromkeys(
        (
            "llm.calls",
            "llm.failures",
            "llm.fallbacks",
            "llm.truncated",
            "llm.retries",
            "memory.cleanup.count",
            "memory.cleanup.items.before",
            "memory.cleanup.items.after",
            "memory.compress.count",
            "memory.compress.items.before",
            "memory.compress.items.after",
            "memory.archived",
            "longterm.memories",
            "longterm.duplicates",
            "longterm.skipped",
            "longterm.archived.max_items",
            "longterm.extract.failures",
        ),
        0,
    )
    summary_tokens: list[int] = []
    for e in events:
        d = e.data
        if e.kind == LLM_CALL:
            out["llm.calls"] += 1
            out["llm.failures"] += bool(d.get("failed"))
            out["llm.truncated"] += bool(d.get("truncated"))
            out["llm.retries"] += call_retries(d)
        elif e.kind == FALLBACK:
            out["llm.fallbacks"] += 1
        elif e.kind in MEMORY_EDITS:
            edit = "compress" if e.kind == MEMORY_COMPRESS else "cleanup"
            out[f"memory.{edit}.count"] += 1
            out[f"memory.{edit}.items.before"] += int(d.get("before_items") or 0)
            out[f"memory.{edit}.items.after"] += int(d.get("after_items") or 0)
            if e.kind == MEMORY_COMPRESS:
                summary_tokens.append(int(d.get("summary_tokens") or 0))
        elif e.kind == LONGTERM_EXTRACT:
            out["longterm.memories"] += int(d.get("memories") or 0)
            out["longterm.duplicates"] += int(d.get("duplicates") or 0)
            out["longterm.extract.failures"] += bool(d.get("failed"))
        elif e.kind == LONGTERM_SKIP:
            out["longterm.skipped"] += 1
        out["memory.archived"] += int(d.get("archived") or 0)
        out["longterm.archived.max_items"] += int(d.get("archived_by_cap") or 0)  # after extraction or a tool save
    result: dict[str, int | float | None] = dict(out)
    result["memory.compress.summary_tokens.mean"] = statistics.fmean(summary_tokens) if summary_tokens else None
    return result
