"""`LongTermMemoryService`: load at session start, extract and save after each turn, decay, archive.

The first design document's LongTermMemoryService and its two channels: automatic extraction
(source ``auto_extract``, one new entry per memory, no dedup unless `dedup_auto_extract`) and
the agent's own saves (source ``agent_tool``, deduplicated by substring). Both count the
duplicates they see. The store is the source of truth; each namespace's index is rebuilt from
it whenever the namespace's memories changed. Time is the caller's clock (`CallContext.now`,
the simulator's virtual clock), so months of decay replay in milliseconds.

Decay follows the document: ``relevance_score * decay_factor ** days_since_access``. memlab
computes it when it is needed instead of rewriting every row each day (the same numbers, no
double decay); an access stores the decayed score and restarts the clock. Beyond the document:
each type has its own decay factor (from a half-life), PROCEDURE memories may expire
(`TypePolicy.ttl_days`), a new PREFERENCE supersedes (archives) an older one that says
nearly the same (cosine >= `supersede_similarity`), and a new memory records which older ones it
revises (`memlab.longterm.revision`), which search then reads just above them.
"""

from __future__ import annotations

import hashlib
import queue
import threading
from collections import Counter, deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from datetime import datetime
from typing import Any

import numpy as np

from memlab.embed.base import Embedder
from memlab.errors import MemlabError
from memlab.llm.base import ChatModel, LLMError
from memlab.longterm.extraction import REPEAT_WINDOW, extract, should_skip_extraction
from memlab.longterm.index import IndexSpec, MemoryIndex, make_index
from memlab.longterm.llm_updates import llm_revised_ids
from memlab.longterm.model import (
    SOURCE_AGENT_TOOL,
    SOURCE_AUTO_EXTRACT,
    Memory,
    MemoryDraft,
    MemoryType,
    Retrieved,
    TypePolicy,
    naive_utc,
    namespace_for,
    namespace_key,
)
from memlab.longterm.rerank import DEFAULT_PIPELINE, RankContext, Stage, StageTrace, build_pipeline, decayed_score, rank
from memlab.longterm.rerank.dedup import normalized
from memlab.longterm.revision import RevisionRule, revised_ids
from memlab.longterm.store import MemoryStore
from memlab.messages import Message
from memlab.runtime.agent import CallContext
from memlab.text import search_terms
from memlab.trace import LONGTERM_EXTRACT, LONGTERM_RETRIEVE, LONGTERM_SKIP, Event, emit, recording, timed

# The design document's configuration defaults (agent.defaults.long-term-memory).
DEFAULT_ENABLED = False
DEFAULT_NAMESPACE = "default"
DEFAULT_MAX_MEMORIES = 100  # max-items: memories kept per user before the lowest-scoring are archived
DEFAULT_AUTO_EXTRACT = True
DEFAULT_AUTO_LOAD = True
DEFAULT_LOAD_MAX_ITEMS = 10  # also the document's retrieval K
DEFAULT_MEMORY_TOOLS = False

# memlab's per-type policy; the document ranks the types but gives no numbers. FACT is stable
# (no decay) and weighted highest; PREFERENCE changes by being superseded, not by fading;
# PROCEDURE fades and expires; EPISODE is bound to its date and fades fastest. The priors are
# mild on purpose: on LoCoMo, where old events are asked about as often as new ones, stronger
# ones cost recall (docs/longterm.md has the figures).
DEFAULT_TYPES: dict[MemoryType, TypePolicy] = {
    MemoryType.FACT: TypePolicy(weight=1.0),
    MemoryType.PREFERENCE: TypePolicy(weight=0.95),
    MemoryType.PROCEDURE: TypePolicy(weight=0.9, half_life_days=730.0, ttl_days=730.0),
    MemoryType.EPISODE: TypePolicy(weight=0.9, half_life_days=365.0),
}
DEFAULT_ARCHIVE_THRESHOLD = 0.05  # cleanup archives a memory whose decayed score fell below this ...
DEFAULT_ARCHIVE_MIN_ACCESS = 3  # ... and that was retrieved fewer times than this
DEFAULT_SUPERSEDE_SIMILARITY = 0.9
CANDIDATE_OVERSAMPLE = 4  # the index returns this many times k candidates for the prior to re-rank ...
MIN_CANDIDATES = 50  # ... and at least this many


@dataclass(frozen=True)
class LongTermSettings:
    """One agent's long-term memory settings (the document's keys, in snake case)."""

    enabled: bool = DEFAULT_ENABLED
    namespace: str = DEFAULT_NAMESPACE
    max_items: int = DEFAULT_MAX_MEMORIES
    auto_extract: bool = DEFAULT_AUTO_EXTRACT
    auto_load: bool = DEFAULT_AUTO_LOAD
    load_max_items: int = DEFAULT_LOAD_MAX_ITEMS
    memory_tools: bool = DEFAULT_MEMORY_TOOLS

    def merged(self, overrides: Mapping[str, Any]) -> LongTermSettings:
        """These settings with the non-null `overrides` applied (a per-agent entry)."""
        names = {f.name for f in fields(self)}
        unknown = sorted(set(overrides) - names)
        if unknown:
            raise MemlabError(
                f"longterm.agents: unknown key(s) {', '.join(unknown)}; expected {', '.join(sorted(names))}"
            )
        return replace(self, **{k: v for k, v in overrides.items() if v is not None})


@dataclass(frozen=True)
class SaveResult:
    """What one save did: the memory kept (new, or the one it duplicates) and whether it was new."""

    memory: Memory
    saved: bool
    duplicate: bool


def with_context(draft: MemoryDraft, before: Mapping[str, str]) -> MemoryDraft:
    """`draft` with the text of the turn before its first evidence turn (what it answers), if known."""
    first = next((before[e] for e in draft.evidence if e in before), "")
    return replace(draft, context=" ".join(first.split()))


def find_duplicate(content: str, memories: Sequence[Memory]) -> Memory | None:
    """The first memory whose text contains `content` or is contained in it (words, case-folded)."""
    key = normalized(content)
    if not key:
        return None
    for m in memories:
        other = normalized(m.content)
        if other and (key in other or other in key):
            return m
    return None


@dataclass(frozen=True)
class Ranking:
    """One search's hits, best first, and (when traced) each re-ranking stage's input and output."""

    hits: list[Retrieved]
    stages: list[StageTrace]


@dataclass
class _NamespaceIndex:
    """One namespace's index and which memory sits at each of its positions."""

    index: MemoryIndex
    positions: dict[str, int] = field(default_factory=dict)  # memory id -> index position
    texts: dict[str, str] = field(default_factory=dict)  # memory id -> the content it was indexed with
    memories: dict[int, Memory] = field(default_factory=dict)  # index position -> memory
    revisers: dict[str, set[str]] = field(default_factory=dict)  # memory id -> ids of the indexed memories revising it
    next_position: int = 0


class LongTermMemoryService:
    """Long-term memory for every agent and user of one store (see the module docstring)."""

    def __init__(
        self,
        store: MemoryStore,
        embedder: Embedder,
        llm: ChatModel | None = None,
        *,
        defaults: LongTermSettings = LongTermSettings(),
        agents: Mapping[str, Mapping[str, Any]] | None = None,
        types: Mapping[MemoryType, TypePolicy] | None = None,
        index: IndexSpec | None = None,
        rerank: Sequence[Stage] | None = None,
        revision: RevisionRule | None = None,
        language: str = "en",
        dedup_auto_extract: bool = False,
        archive_threshold: float = DEFAULT_ARCHIVE_THRESHOLD,
        archive_min_access: int = DEFAULT_ARCHIVE_MIN_ACCESS,
        supersede_similarity: float | None = DEFAULT_SUPERSEDE_SIMILARITY,
    ) -> None:
        self.store, self.embedder, self.llm = store, embedder, llm
        self.defaults = defaults
        self._agents = {name: defaults.merged(o) for name, o in (agents or {}).items()}
        self.types = {**DEFAULT_TYPES, **(types or {})}
        self.index_spec = index or IndexSpec()
        make_index(self.index_spec)  # fail at start on an unknown kind
        self.rerank: Sequence[Stage] = build_pipeline(DEFAULT_PIPELINE) if rerank is None else rerank
        self.revision_rule = revision or RevisionRule()
        self.language = language
        self.dedup_auto_extract = dedup_auto_extract
        self.archive_threshold, self.archive_min_access = archive_threshold, archive_min_access
        self.supersede_similarity = supersede_similarity
        self.counts: Counter[str] = Counter()  # skips per layer, duplicates, archives, rejections
        self._indexes: dict[str, _NamespaceIndex] = {}
        self._rows_cache: dict[str, list[Memory]] = {}
        self._recent: dict[str, deque[Message]] = {}
        # A sequence number per namespace in every new memory's id: ids depend only on that user's
        # history, so a dialogue's ids (and their token counts) do not depend on the replay's workers.
        self._next_id: Counter[str] = Counter()
        self._lock = threading.RLock()  # one service may serve the reply path and a background worker
        self._saved_at: dict[str, int | None] = {}  # namespace key -> its store version after this service's last save

    def checkpoint_state(self) -> dict[str, Any]:
        """The in-process state a resumed replay needs (memories themselves are in the store)."""
        recent = {ns: list(turns) for ns, turns in self._recent.items()}
        return {"next_id": dict(self._next_id), "recent": recent, "counts": dict(self.counts)}

    def restore_state(self, state: Mapping[str, Any]) -> None:
        self._next_id = Counter(state["next_id"])
        self._recent = {ns: deque(turns, maxlen=REPEAT_WINDOW) for ns, turns in state["recent"].items()}
        self.counts = Counter(state["counts"])
        self._indexes.clear()
        self._rows_cache.clear()

    # --- who and where ----------------------------------------------------------------------

    def settings(self, agent_id: str) -> LongTermSettings:
        """The agent's settings: the defaults with its `agents` entry applied."""
        return self._agents.get(agent_id, self.defaults)

    def namespace(self, ctx: CallContext) -> tuple[str, ...]:
        """Always from the runtime's `SecurityContext`, never from anything the model wrote."""
        return namespace_for(ctx.security, self.settings(ctx.security.agent_id).namespace)

    # --- retrieval ---------------------------------------------------------------------------

    def load_memories(self, ctx: CallContext, query: str, k: int | None = None) -> list[Retrieved]:
        """Session start (auto-load): the top `k` (default `load_max_items`) memories for `query`."""
        settings = self.settings(ctx.security.agent_id)
        if not (settings.enabled and settings.auto_load):
            return []
        self.refresh(ctx)  # a new session reads the store afresh: other writers' memories count too
        return self.search(ctx, query, settings.load_max_items if k is None else k)

    def search(self, ctx: CallContext, query: str, k: int, *, touch: bool = True) -> list[Retrieved]:
        """Top `k` by relevance, re-ranked by the `rerank` stages; `touch` records the access.

        `Retrieved.score` is the index's calibrated relevance in [0, 1] (`memlab.longterm.index`) as the
        stages leave it (stage `decay` scales it by the lifecycle prior ** `prior_weight`).
        """
        return self.retrieve(ctx, query, k, touch=touch).hits

    def retrieve(self, ctx: CallContext, query: str, k: int, *, touch: bool = True, trace: bool = False) -> Ranking:
        """`search`, with (when `trace`) what each re-ranking stage took and gave."""
        now = naive_utc(ctx.now)
        with timed() as t, self._lock:
            ns = self.namespace(ctx)
            entry, build_us = self._index(ns, now)
            with timed() as q:
                ranking = self._query(entry, query, k, now, trace)
            hits = ranking.hits
            if touch and hits:
                self._touch(hits, now)
        emit(
            LONGTERM_RETRIEVE,
            index=self.index_spec.kind,
            candidates=len(entry.positions),
            k=k,
            results=len(hits),
            top_score=round(hits[0].score, 6) if hits else 0.0,
            latency_us=t["us"],
            query_us=q["us"],
            index_build_us=build_us,
        )
        return ranking

    def _query(self, entry: _NamespaceIndex, query: str, k: int, now: datetime, trace: bool) -> Ranking:
        """The top `k` of an index already up to date: embed the query, search, re-rank (no writes)."""
        if not (entry.positions and k > 0 and query.strip()):
            return Ranking([], [])
        qv = self.embedder.embed([query])[0]
        found = entry.index.search(qv, query, max(k * CANDIDATE_OVERSAMPLE, MIN_CANDIDATES))
        candidates = [Retrieved(entry.memories[pos], relevance, similarity) for pos, relevance, similarity in found]
        context = RankContext(
            asked=frozenset(search_terms(query)),
            query_vector=qv,
            k=k,
            now=now,
            embedder=self.embedder,
            types=self.types,
            positions=entry.positions,
            memories=entry.memories,
            revisers=entry.revisers,
            revision_rule=self.revision_rule,
        )
        hits, traces = rank(self.rerank, query, candidates, context, trace=trace)
        return Ranking(hits, traces)

    def _touch(self, hits: Sequence[Retrieved], now: datetime) -> None:
        ns = hits[0].memory.namespace
        ids = [h.memory.id for h in hits]
        touched = self.store.touch(ns, ids, now, lambda m: decayed_score(m, now, self.types[m.type]))
        if len(touched) < len(set(ids)):  # another service archived one meanwhile: read the store afresh
            self._rows_cache.pop(namespace_key(ns), None)
        self._remember(touched)

    def _active(self, ns: tuple[str, ...], now: datetime) -> list[Memory]:
        """The namespace's retrievable memories: not archived, not expired."""
        out = []
        for m in self._rows(ns):
            ttl = self.types[m.type].ttl_days
            if ttl is None or (now - m.created_at).total_seconds() < ttl * 86400.0:
                out.append(m)
        return out

    def _index(self, ns: tuple[str, ...], now: datetime) -> tuple[_NamespaceIndex, int | None]:
        """The namespace's index, brought up to date in place (new memories added, gone ones retired),
        and how long updating it took (None when it was up to date)."""
        key = namespace_key(ns)
        entry = self._indexes.get(key)
        if entry is None:
            entry = self._indexes[key] = _NamespaceIndex(make_index(self.index_spec))
        active = {m.id: m for m in self._active(ns, now)}
        gone = [
            pos for mid, pos in entry.positions.items() if mid not in active or active[mid].content != entry.texts[mid]
        ]
        new = [m for m in active.values() if m.id not in entry.positions or m.content != entry.texts[m.id]]
        with timed() as t:
            self._update(entry, gone, new)
        for mid, pos in entry.positions.items():  # same ids and texts; fresher lifecycle fields
            entry.memories[pos] = active[mid]
        return entry, (t["us"] if gone or new else None)

    def _update(self, entry: _NamespaceIndex, gone: list[int], new: list[Memory]) -> None:
        if gone:
            entry.index.remove(gone)
            for pos in gone:
                memory = entry.memories.pop(pos)
                del entry.positions[memory.id], entry.texts[memory.id]
                for old in memory.revises:
                    entry.revisers.get(old, set()).discard(memory.id)
        if new:
            entry.index.add(self.embedder.embed([m.content for m in new]), [m.indexed_text() for m in new])
            for m in new:
                entry.positions[m.id] = entry.next_position
                entry.texts[m.id] = m.content
                entry.next_position += 1
                for old in m.revises:
                    entry.revisers.setdefault(old, set()).add(m.id)

    # --- writing -----------------------------------------------------------------------------

    def extract_and_save(self, ctx: CallContext, turns: Sequence[Message]) -> list[Memory]:
        """After a turn (auto-extract): skip what needs no model, extract the rest, save (`auto_extract`)."""
        settings = self.settings(ctx.security.agent_id)
        if not (settings.enabled and settings.auto_extract) or not turns:
            return []
        if self.llm is None:
            raise MemlabError("longterm: auto_extract needs an llm (set longterm.llm, e.g. llm=extractive)")
        with self._lock:
            ns = self.namespace(ctx)
            recent = self._recent.setdefault(namespace_key(ns), deque(maxlen=REPEAT_WINDOW))
            kept, before = [], {}
            for turn in turns:
                layer = should_skip_extraction(turn, list(recent))
                if recent and turn.id:
                    before[turn.id] = recent[-1].text
                recent.append(turn)
                if layer is None:
                    kept.append(turn)
                    continue
                self.counts[f"skip.{layer}"] += 1
                emit(LONGTERM_SKIP, layer=layer, message_id=turn.id)
            if not kept:
                return []
            failed, capped = None, self.counts["archived.max_items"]
            with timed() as t:
                with timed() as model:
                    try:
                        drafts = [with_context(d, before) for d in extract(self.llm, kept, self.language)]
                    except LLMError as e:
                        failed, drafts = type(e).__name__, []
                with timed() as store:
                    results = self._save_all(ctx, drafts, SOURCE_AUTO_EXTRACT, self.dedup_auto_extract)
        duplicates = sum(r.duplicate for r in results)
        self.counts["extract.failed"] += failed is not None
        emit(
            LONGTERM_EXTRACT,
            turns=len(turns),
            extracted_turns=len(kept),
            memories=sum(r.saved for r in results),
            duplicates=duplicates,
            archived_by_cap=self.counts["archived.max_items"] - capped,
            failed=failed is not None,
            error=failed,
            latency_us=t["us"],
            model_us=model["us"],
            store_us=store["us"],
        )
        return [r.memory for r in results if r.saved]

    def save(
        self,
        ctx: CallContext,
        content: str,
        type: MemoryType = MemoryType.FACT,
        *,
        source: str = SOURCE_AGENT_TOOL,
        evidence: Sequence[str] = (),
        dedup: bool | None = None,
    ) -> SaveResult:
        """Save one memory; tool saves (and `dedup=True`) keep the existing one when they repeat it."""
        if dedup is None:
            dedup = source == SOURCE_AGENT_TOOL or self.dedup_auto_extract
        with self._lock:
            return self._save_all(ctx, [MemoryDraft(type, content, tuple(evidence))], source, dedup)[0]

    def _save_all(self, ctx: CallContext, drafts: Sequence[MemoryDraft], source: str, dedup: bool) -> list[SaveResult]:
        """`_save_drafts` under the store's save lock of the namespace, which holds across processes: when
        another writer added to the namespace since this service last saved, its rows are read again
        first, so the duplicate check sees them and two writers never both save the same content."""
        if not drafts:
            return []
        ns = self.namespace(ctx)
        key = namespace_key(ns)
        with self.store.saving(ns) as block:
            if self._saved_at.get(key) != block.before:
                self._rows_cache.pop(key, None)
            results = self._save_drafts(ctx, drafts, source, dedup)
            self._saved_at[key] = block.after
            return results

    def _save_drafts(
        self, ctx: CallContext, drafts: Sequence[MemoryDraft], source: str, dedup: bool
    ) -> list[SaveResult]:
        settings = self.settings(ctx.security.agent_id)
        ns, now = self.namespace(ctx), naive_utc(ctx.now)
        existing = self._active(ns, now)
        results, new = [], []
        for draft in drafts:
            duplicate = find_duplicate(draft.content, existing)
            self.counts[f"duplicates.{source}"] += duplicate is not None
            if duplicate is not None and dedup:
                results.append(SaveResult(duplicate, saved=False, duplicate=True))
                continue
            memory = Memory(
                id=self._new_id(ns, draft.content, now),
                namespace=ns,
                content=draft.content,
                type=draft.type,
                source=source,
                agent_id=ctx.security.agent_id,
                created_at=now,
                last_accessed_at=now,
                evidence=draft.evidence,
                context=draft.context,
            )
            revises = self._revised_ids(memory, existing)
            if revises:
                memory = replace(memory, revises=revises)
                self.counts["revisions"] += len(revises)
            results.append(SaveResult(memory, saved=True, duplicate=duplicate is not None))
            existing.append(memory)
            new.append(memory)
        self._write(new)
        self._supersede(ns, existing, new)
        self.enforce_max_items(ctx, settings.max_items)
        return results

    def _revised_ids(self, memory: Memory, existing: Sequence[Memory]) -> tuple[str, ...]:
        """The older memories `memory` revises: by the rules, or as the run's LLM decides (`revision.kind`)."""
        if self.revision_rule.kind != "llm":
            return revised_ids(memory, existing, self.revision_rule)
        if self.llm is None:
            raise MemlabError("longterm.revision.kind=llm needs an llm (set llm=litellm)")
        linked = llm_revised_ids(self.llm, memory, existing, self.embedder)
        self.counts["revisions.llm_unreadable"] += linked is None
        return linked or ()

    def _new_id(self, ns: tuple[str, ...], content: str, now: datetime) -> str:
        key = namespace_key(ns)
        self._next_id[key] += 1
        seq = self._next_id[key]
        digest = hashlib.sha1(f"{namespace_key(ns)}\0{now.isoformat()}\0{seq}\0{content}".encode())
        return f"ltm-{digest.hexdigest()[:24]}"

    def _supersede(self, ns: tuple[str, ...], existing: list[Memory], new: list[Memory]) -> None:
        """A new PREFERENCE archives older preferences that say nearly the same thing."""
        prefs = [m for m in new if m.type == MemoryType.PREFERENCE]
        older = [m for m in existing if m.type == MemoryType.PREFERENCE and m not in new]
        if self.supersede_similarity is None or not prefs or not older:
            return
        sims = self.embedder.embed([m.content for m in prefs]) @ self.embedder.embed([m.content for m in older]).T
        stale = sorted({older[j].id for j in np.flatnonzero(sims.max(axis=0) >= self.supersede_similarity)})
        self.counts["superseded"] += self._archive(ns, stale)

    # --- lifecycle ---------------------------------------------------------------------------

    def enforce_max_items(self, ctx: CallContext, max_items: int | None = None) -> list[str]:
        """Archive the lowest-scoring memories beyond `max_items` (default: the agent's setting)."""
        limit = self.settings(ctx.security.agent_id).max_items if max_items is None else max_items
        ns, now = self.namespace(ctx), naive_utc(ctx.now)
        active = self._rows(ns)
        if len(active) <= limit:
            return []
        ranked = sorted(active, key=lambda m: (decayed_score(m, now, self.types[m.type]), m.last_accessed_at))
        ids = [m.id for m in ranked[: len(active) - limit]]
        self.counts["archived.max_items"] += self._archive(ns, ids)
        return ids

    def cleanup(self, ctx: CallContext) -> list[str]:
        """The cleanup job: archive (never delete) what decayed below the threshold, rarely used, or expired."""
        ns, now = self.namespace(ctx), naive_utc(ctx.now)
        with self._lock:
            live = {m.id for m in self._active(ns, now)}
            ids = [
                m.id
                for m in self._rows(ns)
                if m.id not in live
                or (
                    decayed_score(m, now, self.types[m.type]) < self.archive_threshold
                    and m.access_count < self.archive_min_access
                )
            ]
            self.counts["archived.cleanup"] += self._archive(ns, ids)
        return ids

    def archived(self, ctx: CallContext) -> list[Memory]:
        """The caller's archived memories (for listing and restoring)."""
        return self.store.list(self.namespace(ctx), archived=True)

    def restore(self, ctx: CallContext, ids: Sequence[str]) -> int:
        """Bring archived memories back; a restore counts as an access (score 1, clock restarted)."""
        ns, now = self.namespace(ctx), naive_utc(ctx.now)
        with self._lock:
            restored = self.store.restore(ns, ids, now)
            self._rows_cache.pop(namespace_key(ns), None)
        return restored

    def memories(self, ctx: CallContext) -> list[Memory]:
        """The caller's active memories, oldest first."""
        return list(self._rows(self.namespace(ctx)))

    # --- the store, and this service's copy of what it holds ---------------------------------

    def refresh(self, ctx: CallContext) -> None:
        """Forget the cached rows of the caller's namespace, so the next read sees other writers."""
        self._rows_cache.pop(namespace_key(self.namespace(ctx)), None)

    def _rows(self, ns: tuple[str, ...]) -> list[Memory]:
        """The namespace's unarchived rows, read from the store once and kept up to date by our writes."""
        key = namespace_key(ns)
        rows = self._rows_cache.get(key)
        if rows is None:
            rows = self._rows_cache[key] = self.store.list(ns)
        return rows

    def _write(self, memories: Sequence[Memory]) -> None:
        self.store.add(memories)
        self._remember(memories)

    def _remember(self, memories: Sequence[Memory]) -> None:
        """Bring this service's copy of the rows up to date with what was just stored."""
        for m in memories:
            rows = self._rows_cache.get(namespace_key(m.namespace))
            if rows is None:
                continue
            at = next((i for i, r in enumerate(rows) if r.id == m.id), None)
            if at is None:
                rows.append(m)
            else:
                rows[at] = m

    def _archive(self, ns: tuple[str, ...], ids: Sequence[str]) -> int:
        changed = self.store.archive(ns, ids)
        self._rows_cache.pop(namespace_key(ns), None)
        return changed


class ExtractionWorker:
    """Runs `extract_and_save` on a background thread, so a live reply never waits for it.

    `submit` only enqueues (the queue is unbounded); `drain` waits until everything submitted
    is stored (the simulator's deterministic point) and reports the events the jobs emitted to
    the caller's recording, in job order, so model calls, tokens, memories and failures of the
    background work reach the run's records; `close` stops the thread. A job that raises is
    never raised into the reply path: it is reported as a failed LONGTERM_EXTRACT event.
    """

    def __init__(self, service: LongTermMemoryService) -> None:
        self.service = service
        self.errors: list[str] = []
        self._events: list[Event] = []
        self._queue: queue.Queue[tuple[CallContext, tuple[Message, ...]] | None] = queue.Queue()
        self._thread = threading.Thread(target=self._run, name="longterm-extraction", daemon=True)
        self._thread.start()

    def submit(self, ctx: CallContext, turns: Sequence[Message]) -> None:
        self._queue.put_nowait((ctx, tuple(turns)))

    def drain(self) -> None:
        self._queue.join()
        events, self._events = self._events, []
        for e in events:
            emit(e.kind, **e.data)

    def close(self) -> None:
        self._queue.put(None)
        self._thread.join()

    def _run(self) -> None:
        while True:
            job = self._queue.get()
            try:
                if job is None:
                    return
                with recording() as events:  # this thread's own recording, handed over by drain()
                    try:
                        self.service.extract_and_save(*job)
                    except Exception as e:  # the reply path must never see a background failure
                        self.errors.append(f"{type(e).__name__}: {e}")
                        emit(LONGTERM_EXTRACT, turns=len(job[1]), memories=0, failed=True, error=type(e).__name__)
                self._events.extend(events)
            finally:
                self._queue.task_done()
