"""`LongTermPeer`: a long-term memory library in memlab's agent loop, driven like `longterm=locomo`.

The component calls the library at the moments memlab's own `LongTermMemoryComponent` calls its
service, so both receive the same turns and answer the same questions: the turns of each round are
saved when the round ends (the assistant's reply is in the history) and at session end; at session
start the memories relevant to the session's first user message are loaded (``retrieve:
session_start``) or, with ``every_turn``, retrieved again for each user message; each probe
retrieves `probe_k` memories for the question, injects the first `load_max_items` in the same
``<long_term_memory>`` block and reports the turns each memory cites, so `longterm.recall@K`, nDCG,
the injected tokens and the latencies are computed from the same records. A library is plugged in
by a subclass's `reset` / `add` / `search`.

As memlab's memory, a peer's memory is the user's: a user's later dialogue finds what the earlier
ones stored (tau-bench repeats users across trials). `reset` builds one user's library memory into
the attributes a subclass names in `user_state`; the component keeps each user's set and swaps it in
when that user's dialogue starts, so users never see each other's memories, interleaved or not. After the
user's last dialogue of the replay (`on_user_end`) their set is dropped and `release` frees what it holds, so a
replay of many users (LongMemEval's 500) keeps only the memories of users still to come.

The model and embedder calls a library makes (through memlab's adapters, possibly on its own
worker threads, where trace recordings do not reach) are collected by a `Collector` and reported
on the calling step, so aux tokens, cost and `llm.calls` count them as they count memlab's.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypedDict, TypeVar

from memlab.errors import MemlabError
from memlab.llm import LLMError
from memlab.longterm import RESULT_EVIDENCE, RESULT_INJECTED_TOKENS, RESULT_SOURCES, RETRIEVE_MODES, render_block
from memlab.longterm.injection import InjectStage
from memlab.longterm.model import SOURCE_AUTO_EXTRACT
from memlab.longterm.retrievals import RESULT_RETRIEVAL, SCORE_DIGITS
from memlab.messages import Message
from memlab.runtime.agent import ORDER_LONGTERM_INJECT, Component, RequestStage, Runtime
from memlab.tokens import resolve_counter
from memlab.trace import EMBED_CALL, LLM_CALL, LONGTERM_EXTRACT, LONGTERM_RETRIEVE, Event, emit, recording, timed

if TYPE_CHECKING:
    from memlab.dialogues.model import Dialogue, Probe, Session

T = TypeVar("T")
PROBE_K = 20  # the deepest cut-off of longterm.recall@K, as memlab's component
LOAD_MAX_ITEMS = 10  # the design document's retrieval K, as memlab's component
MEMORY_KIND = "FACT"  # the type shown in the block: the libraries keep untyped memories


@dataclass(frozen=True)
class PeerHit:
    """One memory a library returned.

    Args:
        content: Its text.
        evidence: The turn ids it cites.
        score: The library's score for it.
        id: The library's id for it (retrievals.jsonl's memory id).
    """

    content: str
    evidence: tuple[str, ...]
    score: float
    id: str = ""


class PeerSettings(TypedDict, total=False):
    """What every long-term peer takes besides its library's own options (`LongTermPeer`'s arguments).

    Args:
        counter: counts the injected block's tokens (a tokenizer name, or "estimate").
        load_max_items: memories injected in the block (memlab's retrieval K).
        probe_k: memories retrieved per question, the deepest cut-off of longterm.recall@K.
        retrieve: ``session_start`` (load once per session) or ``every_turn`` (again for each user message).
    """

    counter: str
    load_max_items: int
    probe_k: int
    retrieve: str


def retrieval_entry(hits: Sequence[PeerHit]) -> dict[str, Any]:
    """A probe's retrieval as retrievals.jsonl holds memlab's: ``ranked`` ``[id, score, [turns]]``; no stages.

    Args:
        hits: the memories retrieved for the question, best first.

    >>> retrieval_entry([PeerHit("Oslo", ("D1:3",), 0.12345678, "m1")])
    {'ranked': [['m1', 0.123457, ['D1:3']]], 'stages': []}
    """
    return {"ranked": [[h.id, round(h.score, SCORE_DIGITS), list(h.evidence)] for h in hits], "stages": []}


class Collector:
    """Gathers the events of model and embedder calls made on any thread; the step reports them."""

    def __init__(self) -> None:
        self._events: list[Event] = []
        self._lock = threading.Lock()

    def call(self, fn: Callable[[], T]) -> T:
        """Run `fn` (one model or embedder call) and keep the events it emitted.

        Args:
            fn: the call, without arguments; its result is returned.
        """
        with recording() as events:
            try:
                return fn()
            finally:
                with self._lock:
                    self._events.extend(events)

    def drain(self) -> list[Event]:
        """The events kept so far, in order, forgotten here."""
        with self._lock:
            out, self._events = self._events, []
        return out


def model_us(events: Sequence[Event]) -> int:
    """Microseconds spent in model and embedder calls among `events`."""
    return sum(int(e.data.get("latency_us") or 0) for e in events if e.kind in (LLM_CALL, EMBED_CALL))


class LongTermPeer(Component):
    """Base of the long-term peers (module docstring); subclasses wrap one library.

    Args:
        counter: counts the injected block's tokens (a tokenizer name, or "estimate").
        load_max_items: memories injected in the block (memlab's retrieval K).
        probe_k: memories retrieved per question, the deepest cut-off of longterm.recall@K.
        retrieve: ``session_start`` (load once per session) or ``every_turn`` (again for each user message).
    """

    libraries: tuple[str, ...] = ()  # recorded with their versions in the run's manifest
    name = "peer"
    keeps_user_state = True  # a user's memories outlive the dialogue that made them, as memlab's component's
    user_state: tuple[str, ...] = ()  # the attributes `reset` sets: one user's library memory

    def __init__(
        self,
        counter: str = "cl100k_base",
        load_max_items: int = LOAD_MAX_ITEMS,
        probe_k: int = PROBE_K,
        retrieve: str = "session_start",
    ) -> None:
        if retrieve not in RETRIEVE_MODES:
            raise MemlabError(f"longterm.retrieve: {retrieve!r} is not one of {', '.join(RETRIEVE_MODES)}")
        if load_max_items < 1 or probe_k < 1:
            raise MemlabError(f"longterm ({self.name}): load_max_items and probe_k must be >= 1")
        self.counter = resolve_counter(counter)
        self.load_max_items = load_max_items
        self.probe_k = probe_k
        self.retrieve = retrieve
        self.collector = Collector()
        self._stage = InjectStage(ORDER_LONGTERM_INJECT)
        self._pending: list[Message] = []
        self._ids: dict[str, str] = {}
        self.user: str | None = None  # whose library memory the `user_state` attributes hold
        self._users: dict[str, dict[str, Any]] = {}  # every other user's: their `user_state` and ids

    def memory_id(self, library_id: str) -> str:
        """A stable id for a library's memory id (mem0 and LangMem draw uuid4s): its number, in order first seen.

        Args:
            library_id: the id the library gave the memory.
        """
        return self._ids.setdefault(library_id, f"{self.name}-{len(self._ids):06d}")

    # --- what a library implements
    def reset(self, user: str) -> None:
        """Build an empty library memory for `user` into the attributes named in `user_state`."""
        raise NotImplementedError

    def add(self, turns: Sequence[Message]) -> int:
        """Give the library one round's turns; the number of memories it stored."""
        raise NotImplementedError

    def search(self, query: str, k: int) -> list[PeerHit]:
        """The library's `k` best memories for `query`, best first."""
        raise NotImplementedError

    # --- the runtime's hooks
    @property
    def block(self) -> str:
        """The ``<long_term_memory>`` block the next request gets ("" for none)."""
        return self._stage.block

    def stages(self) -> Sequence[RequestStage]:
        return (self._stage,)

    def on_dialogue_start(self, runtime: Runtime, dialogue: Dialogue) -> None:
        self._pending, self._stage.block = [], ""
        self._switch(dialogue.user_id)

    def on_session_start(self, runtime: Runtime, session: Session) -> None:
        self._stage.block = ""
        if self.retrieve != "session_start":
            return
        first = next((m for m in session.messages if m.role == "user"), None)
        if first is not None and first.text.strip():
            self._stage.block = self._render(self._retrieve(first.text, self.load_max_items))

    def before_iteration(self, runtime: Runtime, query: str | None) -> None:
        if self.retrieve == "every_turn" and query is not None and query.strip():
            self._stage.block = self._render(self._retrieve(query, self.load_max_items))

    def on_message(self, runtime: Runtime, message: Message) -> None:
        self._pending.append(message)

    def on_iteration_end(self, runtime: Runtime, reply: Message) -> None:
        if reply.role == "assistant":  # a round is complete
            self._flush()

    def on_session_end(self, runtime: Runtime, session: Session) -> None:
        self._flush()

    def on_probe(self, runtime: Runtime, probe: Probe) -> dict[str, object]:
        hits = self._retrieve(probe.question, max(self.probe_k, self.load_max_items))
        self._stage.block = self._render(hits[: self.load_max_items])
        return {
            RESULT_EVIDENCE: [list(h.evidence) for h in hits],
            RESULT_SOURCES: [SOURCE_AUTO_EXTRACT] * len(hits),
            RESULT_INJECTED_TOKENS: self.counter.count_text(self._stage.block) if self._stage.block else 0,
            RESULT_RETRIEVAL: retrieval_entry(hits),
        }

    def on_user_end(self, runtime: Runtime, user_id: str) -> None:
        """Drop the user's library memory (no dialogue of theirs is left), and let the library free it (`release`)."""
        if user_id == self.user:
            self._park()
        state = self._users.pop(user_id, None)
        if state is not None:
            self.release(state)

    def release(self, state: dict[str, Any]) -> None:
        """Free what one user's library memory holds beyond Python objects (`state`: its `user_state` values, ids)."""

    def close(self) -> None:
        """Release every user's library memory still held (the replay calls it when it is done)."""
        self._park()
        while self._users:
            self.release(self._users.popitem()[1])

    def checkpoint(self) -> dict[str, Any]:
        raise MemlabError(
            f"longterm={self.name}: a library's memory cannot be checkpointed (sim.stop_after_session); run it whole"
        )

    # --- shared plumbing
    def _switch(self, user: str) -> None:
        """Make `user`'s library memory the current one: kept from their earlier dialogue, else a new one."""
        if user == self.user:
            return
        self._park()
        self.user = user
        kept = self._users.pop(user, None)
        if kept is None:
            self._ids = {}
            self.reset(user)
        else:
            for name, value in kept.items():
                setattr(self, name, value)

    def _park(self) -> None:
        """Set the current user's library memory aside (in `_users`, with its ids); no user is current after."""
        if self.user is not None:
            self._users[self.user] = {name: getattr(self, name) for name in ("_ids", *self.user_state)}
            for name in self.user_state:
                setattr(self, name, None)
            self.user, self._ids = None, {}

    def _render(self, hits: Sequence[PeerHit]) -> str:
        return render_block([(MEMORY_KIND, h.content, h.score) for h in hits])

    @contextmanager
    def _reporting(self) -> Iterator[list[Event]]:
        """Report the library's model and embedder calls made inside the block, after it (its events)."""
        calls: list[Event] = []
        try:
            yield calls
        finally:
            calls.extend(self.collector.drain())
            for e in calls:
                emit(e.kind, **e.data)

    def _retrieve(self, query: str, k: int) -> list[PeerHit]:
        with self._reporting() as calls, timed() as t:
            hits = self.search(query, k)[:k]
        emit(
            LONGTERM_RETRIEVE,
            index=self.name,
            k=k,
            results=len(hits),
            top_score=round(hits[0].score, 6) if hits else 0.0,
            latency_us=t["us"],
            query_us=t["us"],
            embed_us=model_us(calls),
        )
        return hits

    def _flush(self) -> None:
        turns = [m for m in self._pending if m.text.strip()]
        self._pending = []
        if not turns:
            return
        failed: str | None = None
        memories = 0
        with self._reporting() as calls, timed() as t:
            try:
                memories = self.add(turns)
            except LLMError as e:  # the model failed: this round's memories are lost, as memlab's extraction loses them
                failed = type(e).__name__
        spent = model_us(calls)
        emit(
            LONGTERM_EXTRACT,
            turns=len(turns),
            extracted_turns=len(turns),
            memories=memories,
            duplicates=0,
            archived_by_cap=0,
            failed=failed is not None,
            error=failed,
            latency_us=t["us"],
            model_us=spent,
            store_us=max(t["us"] - spent, 0),
        )


def evidence_of(turns: Sequence[Message]) -> tuple[str, ...]:
    """The ids of `turns` (those that have one), in order: what a memory made from them cites."""
    return tuple(m.id for m in turns if m.id)
