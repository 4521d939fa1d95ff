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
import itertools
import time
from collections.abc import Iterable, Iterator, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field, fields
from typing import Any, Protocol, TypeVar, overload

# The logger of a run's own progress and warnings: run.log and stderr, one line each (memlab.experiment attaches them).
PROGRESS_LOGGER = "memlab.progress"
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
TOOL_UNKNOWN = "tool.unknown"  # a tool call naming no tool a component offers (the runtime answers with an error)
LATENCY_REFERENCE = "latency.reference"  # the reference workload timed during a replay (memlab.sim.reference)


@dataclass(frozen=True)
class Event:
    """One thing that happened: a kind from the list above and flat data, JSON-ready but a SUMMARY's `SourceIds`."""

    kind: str
    data: dict[str, Any] = field(default_factory=dict)


class _HasId(Protocol):
    @property
    def id(self) -> str | None: ...


class _Chain:
    """Messages a summarizer folded, in order, only ever appended to; each `SourceIds` of it lists a prefix.

    Each message's id is read once for the whole chain (`_listed`, the ids so far, None included). Pickled as
    those ids, so a run's records pickle one list per chain, not one per summary; unpickled, it has no messages.
    """

    __slots__ = ("_listed", "messages")

    def __init__(self, messages: Iterable[_HasId] = (), listed: Iterable[str | None] = ()) -> None:
        self.messages: list[_HasId] = list(messages)
        self._listed: list[str | None] = list(listed)

    def ids(self, stop: int) -> tuple[str, ...]:
        """The ids, those not None, of the first `stop` messages."""
        return tuple(i for i in itertools.islice(self._listed_to(stop), stop) if i is not None)

    def _listed_to(self, stop: int) -> list[str | None]:
        listed = self._listed
        if len(listed) < stop:
            listed.extend([m.id for m in self.messages[len(listed) : stop]])
        return listed

    def __reduce__(self) -> tuple[Any, ...]:
        return (_Chain, ((), self._listed_to(len(self.messages))))


class SourceIds(Sequence[str]):
    """The ids (those not None, in order) of the messages a summary folded, listed when first read.

    A summarizing strategy folds most of a long history on every call, so listing every folded id
    made each call cost the history's length. This keeps the messages (a copy at C speed; a prefix of
    a `SourceChain`'s list, shared with the summarizer's other summaries) and lists their ids only when
    read: metrics read those of the summaries a probe's request carries, not every call's. Equal to
    any list or tuple of the same ids; pickled with its chain's ids (one list per chain in one pickle).

    >>> from memlab.messages import Message
    >>> ids = SourceIds([Message("user", "a", id="D1:1"), Message("system", "b"), Message("user", "c", id="D1:2")])
    >>> len(ids), ids == ["D1:1", "D1:2"], ids
    (2, True, SourceIds(['D1:1', 'D1:2']))
    """

    __slots__ = ("_chain", "_ids", "_stop")

    def __init__(self, messages: Iterable[_HasId]) -> None:
        chain = _Chain(messages)
        self._chain: _Chain | None = chain
        self._stop = len(chain.messages)
        self._ids: tuple[str, ...] | None = None

    @classmethod
    def _prefix(cls, chain: _Chain | None, stop: int, ids: tuple[str, ...] | None = None) -> SourceIds:
        """The ids of `chain`'s first `stop` messages, or `ids`: how a `SourceChain` makes one, how one is unpickled."""
        out = cls.__new__(cls)
        out._chain, out._stop, out._ids = chain, stop, ids
        return out

    def listed(self) -> tuple[str, ...]:
        """The ids as a tuple, listed on the first call (the chain is then let go)."""
        if self._ids is None:
            assert self._chain is not None  # set until listed
            self._ids, self._chain = self._chain.ids(self._stop), None
        return self._ids

    def __len__(self) -> int:
        return len(self.listed())

    @overload
    def __getitem__(self, i: int) -> str: ...

    @overload
    def __getitem__(self, i: slice) -> tuple[str, ...]: ...

    def __getitem__(self, i: int | slice) -> str | tuple[str, ...]:
        return self.listed()[i]

    def __iter__(self) -> Iterator[str]:
        return iter(self.listed())

    def __eq__(self, other: object) -> bool:
        if isinstance(other, SourceIds | tuple | list):
            return self.listed() == tuple(other)
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self.listed())

    def __repr__(self) -> str:
        return f"SourceIds({list(self.listed())!r})"

    def __reduce__(self) -> tuple[Any, ...]:
        return (SourceIds._prefix, (self._chain, self._stop, self._ids))


class SourceChain:
    """`SourceIds` for the sources of one summarizer, each of which mostly begins with the one before.

    SUMMARIZE folds all of a growing history but its ends on every call, so the same first messages
    again and again: 16,000 messages made 8,000 summaries holding a tuple of about 8,000 messages
    each (64M references, 512 MB). Here a source that begins with the previous one's messages
    appends only its new ones to the list the earlier `SourceIds` list a prefix of, so the
    summaries of a history of N messages hold O(N) references; any other source starts a new list.
    Beyond the design documents (issue 29's scale, docs/speed.md "Scale"). Messages are compared
    with ``==`` once the first and last of the shared part are the very same objects (so a
    history read afresh on every call is not compared item by item): equal messages have equal ids.

    >>> from memlab.messages import Message
    >>> ms = [Message("user", str(i), id=f"D1:{i}") for i in range(4)]
    >>> chain = SourceChain()
    >>> [list(chain.ids(ms[:n])) for n in (2, 4, 1)]
    [['D1:0', 'D1:1'], ['D1:0', 'D1:1', 'D1:2', 'D1:3'], ['D1:0']]
    """

    def __init__(self) -> None:
        self._chain = _Chain()

    def __reduce__(self) -> tuple[Any, ...]:
        return (SourceChain, ())  # a copy starts a chain of its own (an unpickled chain holds ids, not messages)

    def ids(self, source: Sequence[_HasId]) -> SourceIds:
        """The ids of `source`, sharing the messages it has in common with the last source."""
        held = self._chain.messages
        n = min(len(source), len(held))
        part = source[:n]  # a list, but for a tuple's slice
        common = held if n == len(held) else held[:n]  # a source that grows: the whole list, not a copy
        if n and not (part[0] is held[0] and part[-1] is held[n - 1] and _as_list(part) == common):
            self._chain = _Chain(source)
        elif len(source) > len(held):
            held.extend(source[n:])
        return SourceIds._prefix(self._chain, len(source))


def _as_list(items: Sequence[_HasId]) -> list[_HasId]:
    """`items` as a list: itself when it is one."""
    return items if isinstance(items, list) else list(items)


@dataclass(frozen=True)
class SummaryEvent:
    """The SUMMARY event's fields: one per summary asked of a model, on every layer.

    `layer` is ``context``, ``memory`` or ``compressor``; `summary_tokens` is None when the model
    returned nothing usable (it failed); `fallback` names what the caller did instead of using the
    summary (None when it was accepted); `text` is the summary as it is stored or sent.
    """

    layer: str
    strategy: str
    source_ids: Sequence[str]
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
        """Report this summary to the open recording (the source ids as `SourceIds`, else as a list)."""
        data = {f.name: getattr(self, f.name) for f in fields(self)}
        ids = self.source_ids
        emit(SUMMARY, **{**data, "source_ids": ids if isinstance(ids, SourceIds) else list(ids)})

    @classmethod
    def of(cls, event: Event) -> SummaryEvent:
        """The typed view of a SUMMARY event."""
        d = {**event.data, "source_ids": tuple(event.data.get("source_ids") or ())}
        return cls(**{f.name: d[f.name] for f in fields(cls) if f.name in d})


_Found = TypeVar("_Found")  # what a `collecting` block collects
_sink: ContextVar[list[Event] | None] = ContextVar("memlab_trace_sink", default=None)


def emit(kind: str, **data: Any) -> None:
    """Report an event to the innermost open recording, if any."""
    sink = _sink.get()
    if sink is not None:
        sink.append(Event(kind, data))


@contextlib.contextmanager
def collecting(into: ContextVar[list[_Found] | None]) -> Iterator[list[_Found]]:
    """A new list that `into` holds inside the block, for what code running there notes (a nested block: its own)."""
    found: list[_Found] = []
    token = into.set(found)
    try:
        yield found
    finally:
        into.reset(token)


def recording() -> contextlib.AbstractContextManager[list[Event]]:
    """Collect the events emitted inside the block (nested recordings see only their own)."""
    return collecting(_sink)


@contextlib.contextmanager
def timed() -> Iterator[dict[str, int]]:
    """Measure a block in microseconds: ``with timed() as t: ...; t["us"]``."""
    out = {"us": 0}
    start = time.perf_counter_ns()
    try:
        yield out
    finally:
        out["us"] = (time.perf_counter_ns() - start) // 1000
