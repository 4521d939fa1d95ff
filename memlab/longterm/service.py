"""`LongTermMemoryService`: load at session start, extract and save after each turn, decay, archive.

The first design document's LongTermMemoryService and its two channels: automatic extraction
(source ``auto_extract``, one new entry per memory, no dedup unless `dedup_auto_extract`) and
the agent's own saves (source ``agent_tool``, deduplicated by substring, `find_duplicate`). Both count the
duplicates they see. The store is the source of truth; the service keeps each namespace's rows in a
`memlab.longterm.terms.NamespaceBook` (by id, speaker, word and term), updated in place by its own
writes and read again only when the store's namespace version or count says another writer changed
it, and brings each namespace's index up to date with the rows that changed. Time is the caller's
clock (`CallContext.now`, the simulator's virtual clock), so months of decay replay in milliseconds.

Decay follows the document: ``relevance_score * decay_factor ** days_since_access``. memlab
computes it when it is needed instead of rewriting every row each day (the same numbers, no
double decay); an access stores the decayed score and restarts the clock. Beyond the document:
each type has its own decay factor (from a half-life), PROCEDURE memories may expire
(`TypePolicy.ttl_days`), a new PREFERENCE supersedes (archives) an older one that says
nearly the same (cosine >= `supersede_similarity`), and a new memory records which older ones it
revises (`memlab.longterm.revision`), which search then reads just above them.
"""

from __future__ import annotations

import contextlib
import hashlib
import queue
import threading
from collections import Counter, deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

import numpy as np

from memlab.embed.base import Embedder
from memlab.errors import MemlabError
from memlab.llm.base import ChatModel, LLMError
from memlab.longterm.extraction import REPEAT_WINDOW, extract, should_skip_extraction
from memlab.longterm.index import ExactIndex, IndexSpec, MemoryIndex, cosines, make_index
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
from memlab.longterm.rerank import (
    DEFAULT_PIPELINE,
    RankContext,
    Stage,
    StageTrace,
    build_pipeline,
    decayed_score,
    prior,
    rank,
)
from memlab.longterm.revision import RevisionRule, revised_ids, speaker
from memlab.longterm.revision_meaning import MEANING, MeaningLinks
from memlab.longterm.settings import LongTermSettings, ServiceRules
from memlab.longterm.statement_vectors import RuleVectors
from memlab.longterm.store import MemoryStore
from memlab.longterm.terms import NamespaceBook, content_problem, normalized
from memlab.messages import Message
from memlab.runtime.agent import CallContext
from memlab.text import search_terms
from memlab.trace import LONGTERM_EXTRACT, LONGTERM_RETRIEVE, LONGTERM_SKIP, Event, emit, recording, timed

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
CANDIDATE_OVERSAMPLE = 4  # the index returns this many times k candidates for the prior to re-rank ...
MIN_CANDIDATES = 50  # ... and at least this many


@dataclass(frozen=True)
class SaveResult:
    """What one save did: the memory kept (new, or the one it duplicates) and whether it was new.

    Attributes:
        memory: The memory saved, or the stored one the new content duplicates.
        saved: A new memory was stored.
        duplicate: The content is inside a stored memory or holds one (`find_duplicate`), so nothing new was stored.
    """

    memory: Memory
    saved: bool
    duplicate: bool


def with_context(draft: MemoryDraft, before: Mapping[str, str]) -> MemoryDraft:
    """`draft` with the text of the turn before its first evidence turn (what it answers), if known."""
    first = next((before[e] for e in draft.evidence if e in before), "")
    return replace(draft, context=" ".join(first.split()))


def find_duplicate(content: str, memories: Sequence[Memory]) -> Memory | None:
    """The first memory whose text contains `content` or is contained in it: the design document's substring dedup.

    Compared as `normalized` texts (case-folded words joined by one space), beyond the document's plain
    substring test: a model that saves a fact again rarely repeats its case and punctuation. A substring
    still, as the document says: "cat" is in "the category" too. `NamespaceBook.duplicate` answers the same
    over a namespace by lookups.

    >>> from memlab.longterm.model import Memory, MemoryType
    >>> from datetime import datetime
    >>> def m(text): return Memory("m", ("ns",), text, MemoryType.FACT, "agent_tool", "", datetime(2024, 1, 1),
    ...                            datetime(2024, 1, 1))
    >>> find_duplicate("the CAT", [m("The category is open.")]) is not None, find_duplicate("dog", [m("A cat.")])
    (True, None)
    """
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
    """One search's hits, best first, and (when traced) each re-ranking stage's input and output.

    Attributes:
        hits: The memories found, best first.
        stages: Each re-ranking stage's input and output (empty unless traced), for the retrieval report.
    """

    hits: list[Retrieved]
    stages: list[StageTrace]


@dataclass
class _NamespaceIndex:
    """One namespace's index, which memory sits at each of its positions, and its statements' vectors."""

    index: MemoryIndex
    vectors: RuleVectors  # its memories' statement vectors, shared by the rules by meaning (stage updates, links)
    positions: dict[str, int] = field(default_factory=dict)  # memory id -> index position
    texts: dict[str, str] = field(default_factory=dict)  # memory id -> the content it was indexed with
    memories: dict[int, Memory] = field(default_factory=dict)  # index position -> memory
    revisers: dict[str, set[str]] = field(default_factory=dict)  # memory id -> ids of the indexed memories revising it
    next_position: int = 0
    book: NamespaceBook | None = None  # the rows it was last brought up to date with
    preferences: ExactIndex = field(default_factory=ExactIndex)  # the PREFERENCE memories' vectors (supersede)
    preference_ids: list[str] = field(default_factory=list)  # `preferences` position -> memory id
    preference_at: dict[str, int] = field(default_factory=dict)  # memory id -> `preferences` position


class LongTermMemoryService:
    """Long-term memory for every agent and user of one store (see the module docstring).

    Built by `LongTermMemoryComponent` from `LongTermConfig`, whose fields document each setting.

    Args:
        store: Where the memories live (the source of truth).
        embedder: Embeds memories and queries for the dense index and supersession.
        llm: Extracts memories after each round (None: no automatic extraction).
        defaults: Every agent's settings unless its `agents` entry says otherwise (None: the document's).
        agents: Per-agent overrides of `defaults`, by agent id (null values keep the default).
        types: Per-type weight, decay and expiry over `DEFAULT_TYPES`.
        index: The search index and its parameters (None: the default `IndexSpec`).
        rerank: The re-ranking stages after the index, in order (None: `DEFAULT_PIPELINE`).
        revision: Which older memories a new one revises at save time (None: the default rule).
        rules: Extraction language, dedup, supersession and cleanup thresholds (None: memlab's defaults).
    """

    def __init__(
        self,
        store: MemoryStore,
        embedder: Embedder,
        llm: ChatModel | None = None,
        *,
        defaults: LongTermSettings | None = None,
        agents: Mapping[str, Mapping[str, Any]] | None = None,
        types: Mapping[MemoryType, TypePolicy] | None = None,
        index: IndexSpec | None = None,
        rerank: Sequence[Stage] | None = None,
        revision: RevisionRule | None = None,
        rules: ServiceRules | None = None,
    ) -> None:
        self.store, self.embedder, self.llm = store, embedder, llm
        self.defaults = defaults or LongTermSettings()
        self._agents = {name: self.defaults.merged(o) for name, o in (agents or {}).items()}
        self.types = {**DEFAULT_TYPES, **(types or {})}
        self.index_spec = index or IndexSpec()
        make_index(self.index_spec)  # fail at start on an unknown kind
        self.rerank: Sequence[Stage] = build_pipeline(DEFAULT_PIPELINE) if rerank is None else rerank
        self.revision_rule = revision or RevisionRule()
        self.rules = rules or ServiceRules()
        self.counts: Counter[str] = Counter()  # skips per layer, duplicates, archives, rejections
        self._indexes: dict[str, _NamespaceIndex] = {}
        self._books: dict[str, NamespaceBook] = {}  # namespace key -> its unarchived rows, indexed
        self._recent: dict[str, deque[Message]] = {}
        # A sequence number per namespace in every new memory's id: ids depend only on that user's
        # history, so a dialogue's ids (and their token counts) do not depend on the replay's workers.
        self._next_id: Counter[str] = Counter()
        self._lock = threading.RLock()  # one service may serve the reply path and a background worker
        self._known: dict[str, int | None] = {}  # namespace key -> the store version its book reflects (None: unknown)
        self._holding: set[str] = set()  # namespace keys whose save lock this service holds now
        self._links: MeaningLinks | None = None  # the save-time linker of `revision.kind=meaning`

    def checkpoint_state(self) -> dict[str, Any]:
        """The in-process state a resumed replay needs (memories themselves are in the store)."""
        recent = {ns: list(turns) for ns, turns in self._recent.items()}
        return {"next_id": dict(self._next_id), "recent": recent, "counts": dict(self.counts)}

    def restore_state(self, state: Mapping[str, Any]) -> None:
        self._next_id = Counter(state["next_id"])
        self._recent = {ns: deque(turns, maxlen=REPEAT_WINDOW) for ns, turns in state["recent"].items()}
        self.counts = Counter(state["counts"])
        self._indexes.clear()
        self._books.clear()

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
        return self.search(ctx, query, settings.load_max_items if k is None else k)

    def search(self, ctx: CallContext, query: str, k: int, *, touch: bool = True) -> list[Retrieved]:
        """Top `k` by relevance, re-ranked by the `rerank` stages; `touch` records the access. A memory of relevance
        0 (no term shared with the query, cosine <= 0) is not a hit: it is neither returned nor touched.

        Each search first reads the namespace's store version: when another writer changed which rows are
        active (a save, an archive, a restore), the namespace is read again, so its archives are never served.

        `Retrieved.score` is the index's calibrated relevance in [0, 1] (`memlab.longterm.index`) as the
        stages leave it (stage `decay` scales it by the lifecycle prior ** `prior_weight`).
        """
        return self.retrieve(ctx, query, k, touch=touch).hits

    def retrieve(self, ctx: CallContext, query: str, k: int, *, touch: bool = True, trace: bool = False) -> Ranking:
        """`search`, with (when `trace`) what each re-ranking stage took and gave."""
        now = naive_utc(ctx.now)
        with timed() as t, self._lock:
            ns = self.namespace(ctx)
            self._follow(ns)  # another service's archive must not be served from this one's copy
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
            index=entry.index,
            vectors=entry.vectors,
            links=self._links,
        )
        hits, traces = rank(self.rerank, query, candidates, context, trace=trace)
        return Ranking([h for h in hits if h.score > 0], traces)  # relevance 0: nothing shared with the query

    def _touch(self, hits: Sequence[Retrieved], now: datetime) -> None:
        ns = hits[0].memory.namespace
        ids = [h.memory.id for h in hits]
        touched = self.store.touch(ns, ids, now, lambda m: decayed_score(m, now, self.types[m.type]))
        book = self._books.get(namespace_key(ns))
        if book is not None and len(touched) < len(set(ids)):  # another service archived these meanwhile
            book.remove(set(ids) - {m.id for m in touched})
        self._remember(touched)

    def _active(self, ns: tuple[str, ...], now: datetime) -> list[Memory]:
        """The namespace's retrievable memories: not archived, not expired."""
        book = self._book(ns)
        book.expire(now)
        return book.active()

    def _entry(self, ns: tuple[str, ...]) -> _NamespaceIndex:
        """The namespace's entry: its index (empty until `_index` first brings it up to date) and the statement
        vectors that stage `updates` and the links by meaning share."""
        key = namespace_key(ns)
        entry = self._indexes.get(key)
        if entry is None:
            entry = self._indexes[key] = _NamespaceIndex(make_index(self.index_spec), RuleVectors(self.embedder))
        return entry

    def _index(self, ns: tuple[str, ...], now: datetime) -> tuple[_NamespaceIndex, int | None]:
        """The namespace's index, brought up to date in place with the rows that changed since it last read
        them (new memories added, gone or expired ones retired, fresher lifecycle fields), and how long
        updating it took (None when it was up to date)."""
        entry = self._entry(ns)
        book = self._book(ns)
        book.expire(now)
        if entry.book is not book:  # the rows were read again: every indexed memory may have changed
            for mid in entry.positions:
                book.changed[mid] = None
            entry.book = book
        gone: list[int] = []
        new: list[Memory] = []
        for mid in book.changed:
            pos = entry.positions.get(mid)
            memory = book.rows[mid] if book.live(mid) else None
            same = memory is not None and pos is not None and memory.content == entry.texts[mid]
            if pos is not None and not same:
                gone.append(pos)
            if memory is not None and not same:
                new.append(memory)
            elif memory is not None and pos is not None:  # same id and text; fresher lifecycle fields
                entry.memories[pos] = memory
        book.changed.clear()
        new.sort(key=lambda m: book.position[m.id])
        with timed() as t:
            self._update(entry, gone, new)
        return entry, (t["us"] if gone or new else None)

    def _update(self, entry: _NamespaceIndex, gone: list[int], new: list[Memory]) -> None:
        if gone:
            entry.index.remove(gone)
            for pos in gone:
                memory = entry.memories.pop(pos)
                del entry.positions[memory.id], entry.texts[memory.id]
                for old in memory.revises:
                    entry.revisers.get(old, set()).discard(memory.id)
                if memory.id in entry.preference_at:
                    entry.preferences.remove([entry.preference_at.pop(memory.id)])
        if new:
            vectors = self.embedder.embed([m.content for m in new])
            entry.index.add(vectors, [m.indexed_text() for m in new], [m.context for m in new])
            prefs = [i for i, m in enumerate(new) if m.type == MemoryType.PREFERENCE]
            if prefs:
                entry.preferences.add(vectors[prefs], ())
                for i in prefs:
                    entry.preference_at[new[i].id] = len(entry.preference_ids)
                    entry.preference_ids.append(new[i].id)
            for m in new:
                entry.positions[m.id] = entry.next_position
                entry.memories[entry.next_position] = m
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
                        drafts = [with_context(d, before) for d in extract(self.llm, kept, self.rules.language)]
                    except LLMError as e:
                        failed, drafts = type(e).__name__, []
                with timed() as store:
                    results = self._save_all(ctx, drafts, SOURCE_AUTO_EXTRACT, self.rules.dedup_auto_extract)
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
        type: MemoryType | str = MemoryType.FACT,
        *,
        source: str = SOURCE_AGENT_TOOL,
        evidence: Sequence[str] = (),
        dedup: bool | None = None,
    ) -> SaveResult:
        """Save one memory; tool saves (and `dedup=True`) keep the existing one when they repeat it.

        Content that is not text (only whitespace, a lone surrogate UTF-8 cannot encode) or has no words is a
        `MemlabError` (`content_problem`: the memory tools and automatic extraction refuse it as well);
        `type` is read as the tools read it (`MemoryType.parse`: "preference" is PREFERENCE), and an unknown one
        is a `MemlabError` too, before anything is stored (a stored unknown type would break every later read).
        """
        problem = content_problem(content)
        if problem is not None:
            raise MemlabError(f"save: content {problem}, not {content!r:.80}")
        try:
            kind = MemoryType.parse(type)
        except ValueError as e:
            raise MemlabError(f"save: {e}") from None
        if dedup is None:
            dedup = source == SOURCE_AGENT_TOOL or self.rules.dedup_auto_extract
        with self._lock:
            return self._save_all(ctx, [MemoryDraft(kind, content, tuple(evidence))], source, dedup)[0]

    def _save_all(self, ctx: CallContext, drafts: Sequence[MemoryDraft], source: str, dedup: bool) -> list[SaveResult]:
        """`_save_drafts` under the store's save lock of the namespace, which holds across processes: when
        another writer added to the namespace since this service's book of it was current, its rows are
        read again first, so the duplicate check sees them and two writers never both save the same content."""
        if not drafts:
            return []
        with self._current(self.namespace(ctx)):
            return self._save_drafts(ctx, drafts, source, dedup)

    @contextlib.contextmanager
    def _current(self, ns: tuple[str, ...]) -> Iterator[None]:
        """Hold the namespace's save lock (every process on the store) with this service's book of it current:
        read again first if another writer changed the namespace since; afterwards the book reflects the
        version the block's own writes left (unknown if another write came in between)."""
        key = namespace_key(ns)
        with self.store.saving(ns) as block:
            self._holding.add(key)
            try:
                if self._known.get(key) != block.before:
                    self._load(ns, block.before)
                yield
            except BaseException:
                self._books.pop(key, None)  # the store may hold part of it: read it again next time
                raise
            finally:
                self._holding.discard(key)
            self._known[key] = block.after

    def _save_drafts(
        self, ctx: CallContext, drafts: Sequence[MemoryDraft], source: str, dedup: bool
    ) -> list[SaveResult]:
        settings = self.settings(ctx.security.agent_id)
        ns, now = self.namespace(ctx), naive_utc(ctx.now)
        book = self._book(ns)
        book.expire(now)
        speakers = book.speakers()
        results: list[SaveResult] = []
        new: list[Memory] = []  # this batch's memories, after every row of the book in store order
        for draft in drafts:
            duplicate = book.duplicate(draft.content) or find_duplicate(draft.content, new)
            self.counts[f"duplicates.{source}"] += duplicate is not None
            if duplicate is not None and dedup:
                results.append(SaveResult(duplicate, saved=False, duplicate=True))
                continue
            memory = Memory(
                id=self._new_id(ns, draft.content, now, lambda mid: book.taken(mid) or any(m.id == mid for m in new)),
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
            speakers |= {speaker(draft.content).casefold()}
            revises = self._revised_ids(memory, book, new, speakers)
            if revises:
                memory = replace(memory, revises=revises)
                self.counts["revisions"] += len(revises)
            results.append(SaveResult(memory, saved=True, duplicate=duplicate is not None))
            new.append(memory)
        self._write(new)
        self._supersede(ns, new, now)
        self.enforce_max_items(ctx, settings.max_items)
        return results

    def _revised_ids(
        self, memory: Memory, book: NamespaceBook, new: Sequence[Memory], speakers: frozenset[str]
    ) -> tuple[str, ...]:
        """The older memories `memory` revises: by the rules, or as the run's LLM decides (`revision.kind`).

        The rules read only the book's candidates (a superset of what they link), meaning the speaker's last
        statements (`memlab.longterm.revision_meaning`); the LLM path, which
        picks the speaker's closest older memories itself, reads every live row of the namespace.
        """
        if self.revision_rule.kind == MEANING:
            if self._links is None or self._links.rule != self.revision_rule:
                self._links = MeaningLinks(self.revision_rule)
            return self._links.revised_ids(memory, book, {m.id for m in new}, self._entry(memory.namespace).vectors)
        if self.revision_rule.kind != "llm":
            return revised_ids(memory, book.revision_candidates(memory) + list(new), self.revision_rule, speakers)
        if self.llm is None:
            raise MemlabError("longterm.revision.kind=llm needs an llm (set llm=litellm)")
        older = [m for mid, m in book.rows.items() if book.live(mid)] + list(new)
        linked = llm_revised_ids(self.llm, memory, older, self.embedder)
        self.counts["revisions.llm_unreadable"] += linked is None
        return linked or ()

    def _new_id(self, ns: tuple[str, ...], content: str, now: datetime, taken: Callable[[str], bool]) -> str:
        """The namespace's next sequence number hashed with the memory; a number whose id is `taken` (another
        service on the store, counting on its own, saved the same content at the same time) is skipped, so
        ids stay unique in the store and a single run's ids stay the same."""
        key = namespace_key(ns)
        while True:
            self._next_id[key] += 1
            digest = hashlib.sha1(f"{key}\0{now.isoformat()}\0{self._next_id[key]}\0{content}".encode())
            mid = f"ltm-{digest.hexdigest()[:24]}"
            if not taken(mid):
                return mid

    def _supersede(self, ns: tuple[str, ...], new: list[Memory], now: datetime) -> None:
        """A new PREFERENCE archives older preferences that say nearly the same thing.

        The vectors are the index's own (each memory is embedded once, when indexed), kept apart for the
        namespace's live preferences: one matrix product over them, no Python loop over the namespace.
        """
        prefs = [m for m in new if m.type == MemoryType.PREFERENCE]
        if self.rules.supersede_similarity is None or not prefs:
            return
        entry, _ = self._index(ns, now)  # indexes the new memories (as the next search would) and retires expired
        own = [entry.preference_at[m.id] for m in prefs]
        matrix, older = entry.preferences.rows.matrix, entry.preferences.rows.live().copy()
        older[own] = False
        products = cosines(matrix, matrix[own])
        close = (products.max(axis=0) >= self.rules.supersede_similarity) & older
        stale = sorted(entry.preference_ids[j] for j in np.flatnonzero(close))
        self.counts["superseded"] += self._archive(ns, stale)

    # --- lifecycle ---------------------------------------------------------------------------

    def enforce_max_items(self, ctx: CallContext, max_items: int | None = None) -> list[str]:
        """Archive the memories with the lowest prior (type weight x decayed score, as stage `decay` weighs them)
        beyond `max_items` (default: the agent's setting)."""
        limit = self.settings(ctx.security.agent_id).max_items if max_items is None else max_items
        ns, now = self.namespace(ctx), naive_utc(ctx.now)
        if len(self._book(ns)) <= limit:
            return []
        active = self._rows(ns)
        ranked = sorted(active, key=lambda m: (prior(m, now, self.types[m.type]), m.last_accessed_at))
        ids = [m.id for m in ranked[: len(active) - limit]]
        self.counts["archived.max_items"] += self._archive(ns, ids)
        return ids

    def cleanup(self, ctx: CallContext) -> list[str]:
        """The cleanup job: archive (never delete) what decayed below the threshold, rarely used, or expired.

        Under the namespace's save lock, as a save, so that the book follows the version its archives raise."""
        ns, now = self.namespace(ctx), naive_utc(ctx.now)
        with self._lock, self._current(ns):
            live = {m.id for m in self._active(ns, now)}
            ids = [
                m.id
                for m in self._rows(ns)
                if m.id not in live
                or (
                    decayed_score(m, now, self.types[m.type]) < self.rules.archive_threshold
                    and m.access_count < self.rules.archive_min_access
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
            self._books.pop(namespace_key(ns), None)
        return restored

    def memories(self, ctx: CallContext) -> list[Memory]:
        """The caller's active memories, oldest first."""
        return list(self._rows(self.namespace(ctx)))

    # --- the store, and this service's copy of what it holds ---------------------------------

    def _follow(self, ns: tuple[str, ...]) -> None:
        """Read the namespace's book again if the store's version of it is not the one the book reflects (one
        version read; the version is read before the rows, so a write in between only reads them again later).
        Every search calls it first. Another writer's accesses (lifecycle fields) are read at the next change, or
        when this service touches those rows."""
        key = namespace_key(ns)
        if key not in self._books or key in self._holding:
            return
        version = self.store.version(ns)
        if self._known.get(key) != version:
            self._load(ns, version)

    def _book(self, ns: tuple[str, ...]) -> NamespaceBook:
        """The namespace's book: read from the store once (with its version), kept up to date by our writes."""
        key = namespace_key(ns)
        book = self._books.get(key)
        if book is not None and book.rule != self.revision_rule:  # the rule was replaced: file the rows again
            book = self._books[key] = NamespaceBook(
                book.rows.values(), self.revision_rule, self._ttl_days(), book.archived
            )
        if book is None:
            if key in self._holding:
                book = self._load(ns, None)
            else:
                with self.store.saving(ns) as block:
                    book = self._load(ns, block.before)
        return book

    def _load(self, ns: tuple[str, ...], version: int | None) -> NamespaceBook:
        """Read the namespace's rows into a new book that reflects store version `version`."""
        key = namespace_key(ns)
        rows = self.store.list(ns, archived=None)
        archived = (m.id for m in rows if m.archived)
        active = [m for m in rows if not m.archived]
        book = self._books[key] = NamespaceBook(active, self.revision_rule, self._ttl_days(), archived)
        self._known[key] = version
        return book

    def _ttl_days(self) -> dict[str, float | None]:
        return {str(t): p.ttl_days for t, p in self.types.items()}

    def _rows(self, ns: tuple[str, ...]) -> list[Memory]:
        """The namespace's unarchived rows in store order."""
        return list(self._book(ns).rows.values())

    def _write(self, memories: Sequence[Memory]) -> None:
        self.store.add(memories)
        self._remember(memories)

    def _remember(self, memories: Sequence[Memory]) -> None:
        """Bring this service's books up to date with what was just stored (new rows, or fresher fields)."""
        for m in memories:
            book = self._books.get(namespace_key(m.namespace))
            if book is not None:
                book.add(m)

    def _archive(self, ns: tuple[str, ...], ids: Sequence[str]) -> int:
        changed = self.store.archive(ns, ids)
        book = self._books.get(namespace_key(ns))
        if book is not None:
            book.remove(ids)
        return changed


class ExtractionWorker:
    """Runs `extract_and_save` on a background thread, so a live reply never waits for it.

    `submit` only enqueues (the queue is unbounded); `drain` waits until everything submitted
    is stored (the simulator's deterministic point) and reports the events the jobs emitted to
    the caller's recording, in job order, so model calls, tokens, memories and failures of the
    background work reach the run's records; `close` stops the thread. A job that raises is
    never raised into the reply path: it is reported as a failed LONGTERM_EXTRACT event.

    Args:
        service: The service whose `extract_and_save` the thread runs.
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
