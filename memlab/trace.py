"""Trace events: what strategies, models and memories did, collected per simulated call.

Code anywhere below the runtime reports with `emit(kind, **data)`; the runtime opens a
`recording()` around each step and attaches what was emitted to that step's record.
Outside a recording, `emit` is a no-op, so library users pay nothing for it.

>>> with recording() as events:
...     emit("summary", source_tokens=120, summary_tokens=30)
>>> events[0].kind, events[0].data["summary_tokens"]
('summary', 30)
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from contextvars import ContextVar
from dataclasses import dataclass, field, fields
from typing import Any

# Event kinds used across memlab; metrics count them by these names.
LLM_CALL = "llm.call"
EMBED_CALL = "embed.call"
CONTEXT_APPLY = "context.apply"
SUMMARY = "summary"
FALLBACK = "fallback"
MEMORY_COMPRESS = "MEMORY_COMPRESS"
MEMORY_CLEANUP = "MEMORY_CLEANUP"
LONGTERM_EXTRACT = "longterm.extract"
LONGTERM_RETRIEVE = "longterm.retrieve"
LONGTERM_SKIP = "longterm.skip"
LONGTERM_TOOL = "longterm.tool"
LONGTERM_INJECT = "longterm.inject"
SESSION_FORK = "session.fork"


@dataclass(frozen=True)
class Event:
    """One thing that happened: a kind from the list above and flat, JSON-ready data."""

    kind: str
    data: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class SummaryEvent:
    """The SUMMARY event's fields: one per summary asked of a model, on every layer.

    `layer` is ``context``, ``memory`` or ``compressor``; `summary_tokens` is None when the model
    returned nothing usable (it failed); `fallback` names what the caller did instead of using the
    summary (None when it was accepted); `text` is the summary as it is stored or sent.
    """

    layer: str
    strategy: str
    source_ids: tuple[str, ...]
    source_messages: int
    source_tokens: int
    summary_tokens: int | None
    counter: str
    accepted: bool
    reason: str | None = None
    error: str | None = None
    fallback: str | None = None
    truncated: bool = False
    text: str | None = None
    latency_us: int = 0

    def emit(self) -> None:
        """Report this summary to the open recording (JSON-ready: the source ids as a list)."""
        data = {f.name: getattr(self, f.name) for f in fields(self)}
        emit(SUMMARY, **{**data, "source_ids": list(self.source_ids)})

    @classmethod
    def of(cls, event: Event) -> SummaryEvent:
        """The typed view of a SUMMARY event."""
        d = {**event.data, "source_ids": tuple(event.data.get("source_ids") or ())}
        return cls(**{f.name: d[f.name] for f in fields(cls) if f.name in d})


_sink: ContextVar[list[Event] | None] = ContextVar("memlab_trace_sink", default=None)


def emit(kind: str, **data: Any) -> None:
    """Report an event to the innermost open recording, if any."""
    sink = _sink.get()
    if sink is not None:
        sink.append(Event(kind, data))


@contextlib.contextmanager
def recording() -> Iterator[list[Event]]:
    """Collect the events emitted inside the block (nested recordings see only their own)."""
    events: list[Event] = []
    token = _sink.set(events)
    try:
        yield events
    finally:
        _sink.reset(token)


@contextlib.contextmanager
def timed() -> Iterator[dict[str, int]]:
    """Measure a block in microseconds: ``with timed() as t: ...; t["us"]``."""
    out = {"us": 0}
    start = time.perf_counter_ns()
    try:
        yield out
    finally:
        out["us"] = (time.perf_counter_ns() - start) // 1000
