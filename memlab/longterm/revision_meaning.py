"""Revision links by meaning, made once at save time (`longterm.revision.kind=meaning`, issue 24).

When a memory is saved, each of its statements (a sentence that is not a question and has at least `min_words`
words) is embedded once (all-MiniLM-L6-v2 by default, or the run's embedder; in the namespace's statement vectors,
`memlab.longterm.statement_vectors`, which stage `updates` reads too) and compared with
the last `window` statements of the same speaker in the namespace, one matrix product over a per-speaker ring of
vectors; the new memory revises the `candidates` closest earlier memories whose best statement is at least
`similarity` close (cosine). Two memories of one turn (shared evidence) never link. The cost of a save is the new
memory's statements times at most `window` rows: it does not grow with the namespace (`compared` counts the rows).

At search the `revisions` stage reads the links (`memlab.longterm.rerank.revisions`): it puts the newest reviser
of a top-ranked memory just above it when the reviser bears on the question at least `question_share` as much as
the older memory, by the same embedder's cosine (`question_closeness`): a later remark on the same subject
("Riverside lost again on Sunday") is close to the old statement but further from the question than the answer.

Beyond the design document (whose only revision rule is PREFERENCE supersession) and beyond the value rule
(`memlab.longterm.revision`): no term, cue word or value has to be shared, only meaning; the older memory stays.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from memlab.longterm.model import Memory, namespace_key
from memlab.longterm.revision import RevisionRule, speaker
from memlab.longterm.statement_vectors import RuleVectors, SentenceVectors
from memlab.longterm.terms import NamespaceBook
from memlab.text import split_sentences, words

MEANING = "meaning"  # the `longterm.revision.kind` of this module


def statements(content: str, min_words: int) -> list[str]:
    """The sentences of a memory that state something: not a question, at least `min_words` words. Unlike the value
    rule, a dated sentence counts: a revision is often told as the event that made it ("I sold the Yaris last month").

    >>> statements("Ann: Hi! I live in Krakow now. Did you see it? We flew there last week.", 3)
    ['I live in Krakow now.', 'We flew there last week.']
    """
    who = speaker(content)
    body = content[len(who) + 1 :] if who else content
    out = []
    for sentence in split_sentences(body):
        if sentence.rstrip().endswith(("?", "？")) or len(words(sentence)) < min_words:
            continue
        out.append(sentence)
    return out


@dataclass
class _Ring:
    """The last `size` statement vectors of one speaker, with the memory each belongs to."""

    size: int
    dim: int
    rows: np.ndarray = field(init=False)
    owners: list[str] = field(init=False)
    filled: int = 0  # statements ever filed (the next one goes to filled % size)

    def __post_init__(self) -> None:
        self.rows = np.zeros((self.size, self.dim), dtype=np.float32)
        self.owners = [""] * self.size

    def add(self, owner: str, vectors: np.ndarray) -> None:
        for v in vectors:
            at = self.filled % self.size
            self.rows[at], self.owners[at] = v, owner
            self.filled += 1

    def view(self) -> tuple[np.ndarray, list[str]]:
        n = min(self.filled, self.size)
        return self.rows[:n], self.owners[:n]


@dataclass
class _Space:
    """One namespace's rings, as of the book they were filed from."""

    book: NamespaceBook
    rings: dict[str, _Ring] = field(default_factory=dict)
    evidence: dict[str, frozenset[str]] = field(default_factory=dict)  # filed memory id -> its evidence turns


class MeaningLinks:
    """The save-time linker of one service (`longterm.revision.kind=meaning`, see the module docstring)."""

    def __init__(self, rule: RevisionRule) -> None:
        self.rule = rule
        self._spaces: dict[str, _Space] = {}
        self.compared = 0  # statement rows a save compared with (one matrix product each): the save's cost

    def sentence_vectors(self, vectors: RuleVectors) -> SentenceVectors:
        """The namespace's sentence vectors by this rule's embedder (which reads the question too, at search)."""
        return vectors(self.rule.embedder)

    def vectors(self, memory: Memory, vectors: SentenceVectors) -> np.ndarray:
        """One unit row per statement of `memory` (none for a memory that states nothing)."""
        return vectors.rows(statements(memory.content, self.rule.min_words))

    def question_closeness(self, memory: Memory, question: np.ndarray, vectors: SentenceVectors) -> float:
        """How close (cosine) `memory`'s closest statement is to the question's vector (-1: it states nothing)."""
        rows = self.vectors(memory, vectors)
        return float((rows @ question).max()) if len(rows) else -1.0

    def revised_ids(
        self, memory: Memory, book: NamespaceBook, batch: set[str], vectors: RuleVectors
    ) -> tuple[str, ...]:
        """The earlier memories `memory` revises (closest first), then `memory` filed for later saves.

        `book`: the namespace's rows (a new book, read again from the store, is filed afresh);
        `batch`: the ids saved earlier in the same batch, not yet in the book;
        `vectors`: the namespace's statement vectors.
        """
        sentences = self.sentence_vectors(vectors)
        space = self._space(namespace_key(memory.namespace), book, sentences)
        ring = space.rings.get(speaker(memory.content))
        mine = self.vectors(memory, sentences)
        best: dict[str, float] = {}
        if ring is not None and len(mine):
            rows, owners = ring.view()
            self.compared += len(mine) * len(rows)
            closest = (rows @ mine.T).max(axis=1)
            turns = set(memory.evidence)
            for at in np.flatnonzero(closest >= self.rule.similarity):
                owner = owners[at]
                if (book.live(owner) or owner in batch) and turns.isdisjoint(space.evidence[owner]):
                    best[owner] = max(best.get(owner, -1.0), float(closest[at]))
        self._file(space, memory, mine)
        ranked = sorted(best, key=lambda mid: (-best[mid], mid))
        return tuple(ranked[: self.rule.candidates])

    def _space(self, key: str, book: NamespaceBook, vectors: SentenceVectors) -> _Space:
        """The namespace's rings, filed from `book`'s live rows in store order when the book is new to them."""
        space = self._spaces.get(key)
        if space is None or space.book is not book:
            space = self._spaces[key] = _Space(book)
            for m in book.active():
                self._file(space, m, self.vectors(m, vectors))
        return space

    def _file(self, space: _Space, memory: Memory, rows: np.ndarray) -> None:
        """File `memory`'s statement rows in its speaker's ring."""
        space.evidence[memory.id] = frozenset(memory.evidence)
        if len(rows):
            who = speaker(memory.content)
            ring = space.rings.get(who)
            if ring is None:
                ring = space.rings[who] = _Ring(self.rule.window, rows.shape[1])
            ring.add(memory.id, rows)
