"""Counts over trace events: model calls and failures, fallbacks, memory edits, long-term memories.

>>> from memlab.trace import Event
>>> event_metrics([Event("llm.call", {"failed": True}), Event("fallback", {})])["llm.failures"]
1
"""

from __future__ import annotations

from collections.abc import Iterable

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


def event_metrics(events: Iterable[Event]) -> dict[str, int]:
    """Counts: `llm.*`, `memory.items.before|after`, `memory.archived`, `longterm.memories|duplicates|skipped`.

    - `llm.calls|failures|fallbacks`: LLM_CALL events, those that failed, FALLBACK events;

    - `memory.items.before|after`: items held before and after every compression or cleanup, summed;
    - `memory.archived`: items archived (kept, no longer served) by any event that reports `archived`;
    - `longterm.memories` / `longterm.duplicates`: memories saved by extraction and how many of
      them repeat one already stored (LONGTERM_EXTRACT `memories` / `duplicates`);
    - `longterm.skipped`: turns that extraction skipped before any model call (LONGTERM_SKIP events).
    """
    out = dict.fromkeys(
        (
            "llm.calls",
            "llm.failures",
            "llm.fallbacks",
            "memory.items.before",
            "memory.items.after",
            "memory.archived",
            "longterm.memories",
            "longterm.duplicates",
            "longterm.skipped",
        ),
        0,
    )
    for e in events:
        d = e.data
        if e.kind == LLM_CALL:
            out["llm.calls"] += 1
            out["llm.failures"] += bool(d.get("failed"))
        elif e.kind == FALLBACK:
            out["llm.fallbacks"] += 1
        elif e.kind in MEMORY_EDITS:
            out["memory.items.before"] += int(d.get("before_items") or 0)
            out["memory.items.after"] += int(d.get("after_items") or 0)
        elif e.kind == LONGTERM_EXTRACT:
            out["longterm.memories"] += int(d.get("memories") or 0)
            out["longterm.duplicates"] += int(d.get("duplicates") or 0)
        elif e.kind == LONGTERM_SKIP:
            out["longterm.skipped"] += 1
        out["memory.archived"] += int(d.get("archived") or 0)
    return out
