"""Which of two memories about the same thing is newer, decided from what they say, not from cue words.

A person revises what they said by saying the same kind of thing again with something else in it ("I
stayed put in my Bristol flat" -> weeks later "Finally signed the lease on the place in Leeds"). Often no
word says that it changed, and words that seem to ("again", "now") often revise nothing ("The Forester's
in the garage again, same rattle"). So `newer_first` reads three things, none of them a word list:

- *who*: the same speaker (the ``speaker:`` prefix that extraction and the memory tools write);
- *what*: a statement of the later memory is close in meaning to a statement of the retrieved one
  (cosine between sentences, at least `similarity`, by the run's embedder or by all-MiniLM-L6-v2: the
  stage's `embedder` knob; each sentence embedded once, `memlab.longterm.statement_vectors`; a sentence, not
  the whole turn, because a turn's chatter dilutes what it states);
- *when*: the later memory was saved later (session date, then save order).

At search time (the `updates` stage, `memlab.longterm.rerank.updates`), for each of the top `depth`
retrieved memories, the latest memory of its speaker that says something close to it, and is itself among
the index's candidates scoring at least `relevance_share` of it, goes just above it (taking its score),
unless it already ranks higher. The older one stays (it is history; temporal
questions ask about it), and stays first when the question names a value (a proper name, a number) that
only it states: "Did I live in Lisbon?" asks about the older one. A later memory that only repeats the
earlier one (every content term of the close sentence is in the earlier one) is no revision.

A misfiring cue needs no guard of its own: no cue word counts. A later memory on the same subject that
revises nothing can still be read first (it is close and later); `experiments/update_eval.py`'s misfire
sets measure how often that puts it above the answer (docs/longterm.md, "Updated facts in natural wording").

Beyond the design document, whose only update rule is a PREFERENCE superseding a near-identical one: it
replaces memlab's cue-word rule (`UPDATE_CUE`), whose words the synthetic generator's templates share.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

from memlab.embed.base import Embedder
from memlab.longterm.model import Memory, Retrieved
from memlab.longterm.revision import speaker
from memlab.longterm.statement_vectors import SentenceVectors
from memlab.text import proper_names, search_terms, split_sentences, words
from memlab.vocabulary import PAST_AUXILIARIES, PRESENT_AUXILIARIES

DEFAULT_SIMILARITY = 0.25  # chosen on datasets/updates/dev.json and misfire_dev.json (docs/longterm.md)
# Only the top 3: deeper, the stage pushed answers out of LoCoMo dev7's top 10 (recall@10 -0.013 at depth 10
# with the two knobs below; 0.000 at 3), and rank 1 is what it is for (docs/longterm.md, "second pass").
DEFAULT_DEPTH = 3
# The later memory must be among the index's candidates, scoring at least this share of the one it revises: without
# it, LoCoMo dev7's recall@1 fell from 0.241 to 0.044 (a later, loosely similar turn of the speaker above nearly
# every answer); at 0.3 (the old cue rule's UPDATE_RELEVANCE_SHARE) 0.268 -> 0.138 (turns from rank 10-40 pulled to
# the top); at 0.6 -0.008 with datasets/updates/dev.json's newer@1 unchanged (16 of 61), at 0.8 dev fell to 13.
DEFAULT_RELEVANCE_SHARE = 0.6
# A question whose first auxiliary is past ("When did ...") asks about an event; on LoCoMo dev7 half of the
# stage's rank-1 losses at share 0.3 were such questions (81 of 162), and no dev update question is one.
DEFAULT_PRESENT_TENSE_ONLY = True


def statements(content: str) -> list[str]:
    """The sentences of a memory without its ``speaker:`` prefix (questions state nothing)."""
    who = speaker(content)
    body = content[len(who) + 1 :] if who else content
    return [s for s in split_sentences(body) if s.strip() and not s.rstrip().endswith(("?", "？"))]


def _rows(vectors: SentenceVectors, content: str) -> np.ndarray:
    """One unit row per statement of `content` (none for a memory that states nothing)."""
    return vectors.rows(statements(content))


def _closest(old: Memory, new: Memory, vectors: SentenceVectors) -> tuple[float, int]:
    """The best cosine between a statement of `new` and one of `old`, and which statement of `new`."""
    a, b = _rows(vectors, old.content), _rows(vectors, new.content)
    if not (len(a) and len(b)):
        return -1.0, -1
    sims = b @ a.T
    at = int(np.argmax(sims.max(axis=1)))
    return float(sims[at].max()), at


def _answers(memory: Memory, vectors: SentenceVectors, asked: np.ndarray) -> float:
    """How close (cosine) the memory's closest statement is to the question's vector."""
    rows = _rows(vectors, memory.content)
    return float((rows @ asked).max()) if len(rows) else -1.0


def revises(
    new: Memory, old: Memory, embedder: Embedder | SentenceVectors, similarity: float = DEFAULT_SIMILARITY
) -> bool:
    """`new`, saved after `old` by the same speaker in another turn, restates it with something else.

    >>> from memlab.embed import HashingEmbedder
    >>> from memlab.longterm.model import Memory, MemoryType
    >>> from datetime import datetime
    >>> def m(text, day):
    ...     return Memory(f"m{day}", ("u",), text, MemoryType.FACT, "auto_extract", "chat", datetime(2024, 1, day),
    ...                   datetime(2024, 1, day), evidence=(f"D{day}:1",))
    >>> old = m("Ana: My sister studies law at Leeds.", 1)
    >>> revises(m("Ana: My sister studies medicine at Leeds now.", 9), old, HashingEmbedder())
    True
    >>> revises(m("Ana: My sister studies law.", 9), old, HashingEmbedder())  # a repeat says nothing new
    False
    """
    if not (new.created_at > old.created_at and speaker(new.content) == speaker(old.content)):
        return False
    if set(new.evidence) & set(old.evidence):
        return False  # two memories of one turn (the two channels save a statement twice)
    vectors = embedder if isinstance(embedder, SentenceVectors) else SentenceVectors(embedder)
    cosine, at = _closest(old, new, vectors)
    if cosine < similarity:
        return False
    return not set(search_terms(statements(new.content)[at])) <= set(search_terms(old.content))


def _values(content: str) -> frozenset[str]:
    """The search terms of a memory's proper names and numbers: what a revision replaces ("Bristol", "7")."""
    found = {v for s in statements(content) for v in proper_names(s)}
    found |= {w for w in words(content) if w.isdigit()}
    return frozenset(t for v in found for t in search_terms(v))


def asks_about(old: Memory, new: Memory, asked: frozenset[str]) -> bool:
    """The question names a value only `old` states ("Did I live in Lisbon?"): it asks about the older one."""
    return not asked.isdisjoint(_values(old.content) - set(search_terms(new.content)))


def asks_about_now(question: str) -> bool:
    """The question's first auxiliary verb is present tense ("Where does Maya work?"): it asks what holds now,
    not what happened ("When did Maya start at Stripe?"); a question with neither asks about now.

    >>> asks_about_now("Which city is Priya based in?"), asks_about_now("What did Caroline paint last week?")
    (True, False)
    """
    for word in words(question.lower()):
        if word in PRESENT_AUXILIARIES or word in PAST_AUXILIARIES:
            return word in PRESENT_AUXILIARIES
    return True


def newer_first(
    ranked: Sequence[Retrieved],
    memories: Iterable[Memory],
    embedder: Embedder | SentenceVectors,
    similarity: float = DEFAULT_SIMILARITY,
    depth: int = DEFAULT_DEPTH,
    asked: frozenset[str] = frozenset(),
    relevance_share: float = DEFAULT_RELEVANCE_SHARE,
    question: str = "",
    question_share: float | None = None,
) -> list[Retrieved]:
    """`ranked` with, just above each of its top `depth`, the latest of `memories` revising it (`revises`),
    unless the question (`asked`, its search terms) names a value of the older one only (`asks_about`). With
    `question_share`, the later memory's best statement is at least that share as close (cosine) to `question`
    as the older one's: a revision answers the question, a later remark on the same subject often does not."""
    if not ranked:
        return list(ranked)
    vectors = embedder if isinstance(embedder, SentenceVectors) else SentenceVectors(embedder)
    score = {h.memory.id: h.score for h in ranked}
    asked_vector = vectors.embedder.embed([question])[0] if question_share is not None else None
    by_speaker: dict[str, list[Memory]] = {}
    for m in memories:
        by_speaker.setdefault(speaker(m.content), []).append(m)
    out: list[Retrieved] = []
    placed: set[str] = set()
    for rank, hit in enumerate(ranked):
        if hit.memory.id in placed:
            continue
        if rank < depth:
            same = by_speaker.get(speaker(hit.memory.content), ())
            floor = relevance_share * hit.score  # the later memory must bear on the question too
            near = [m for m in same if score.get(m.id, -1.0) >= floor and m.created_at > hit.memory.created_at]
            vectors.prepare(s for m in (hit.memory, *near) for s in statements(m.content))
            later = [m for m in near if revises(m, hit.memory, vectors, similarity)]
            if asked_vector is not None and question_share is not None and later:
                bar = question_share * _answers(hit.memory, vectors, asked_vector)
                later = [m for m in later if _answers(m, vectors, asked_vector) >= bar]
            newest = max(later, key=lambda m: (m.created_at, m.id), default=None)
            if newest is not None and newest.id not in placed and not asks_about(hit.memory, newest, asked):
                out.append(Retrieved(newest, hit.score, hit.similarity))
                placed.add(newest.id)
        out.append(hit)
        placed.add(hit.memory.id)
    return out
