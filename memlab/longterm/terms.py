"""`NamespaceBook`: one namespace's unarchived memories, indexed by id, speaker, word and term.

The service's copy of a namespace, kept up to date by its own writes in place, so that a save or a
search costs what it changes and what it finds, not the size of the namespace (issue 24 item 8,
issue 29 "service bookkeeping in O(change)"):

- rows by id, in store order, each with its position (the order the duplicate check and the
  revision links follow);
- *duplicates*: the normalized texts (case-folded words joined by one space) by word, so that "the first
  memory whose text contains the new one's, or is contained in it" (the design document's substring match)
  is a walk of a few postings: a text of three or more words that is inside another has its inner words
  (all but the first and last, which may be cut) as whole words of the other, so a new text looks inside
  the rows holding its rarest inner word, and each stored text is filed under its longest inner word for
  the new texts holding that word to find it; texts of one or two words are compared one by one;
- *revisions*: the statements (`memlab.longterm.revision.statements`) of each memory, by speaker and
  term, under a prefix filter (the set-similarity-join kind): a rule that lets an older statement
  miss at most ``M`` of its ``P`` non-value terms shares ``k`` of any ``M + k`` of them with the newer
  one, so each statement is filed under each ``k`` of its ``M + k`` rarest (``k = min(3, P - M)``) and a
  new statement looks up each one, two and three of its terms: groups' postings grow far slower than a
  term's, and a new statement without a value looks nothing up, as it links nothing (the scale benchmark's
  turns, candidates per save at 1k and 20k memories: 7.7 and 104 under single terms, 0.18 and 2.02 now, of
  which the rule links 0.18 and 1.86). A statement with at most ``M`` is filed under all of them and its values.
  A lookup returns a superset of the memories the rule links, in store order; `revised_ids` decides.
- the ids whose content or lifecycle changed since the search index last read them (`changed`),
  and which are expired (a type's ``ttl_days``) at the caller's clock;
- the ids of the namespace's archived rows (`archived`), so that a new id is checked against every stored one.
"""

from __future__ import annotations

import functools
import heapq
import itertools
from collections import Counter
from collections.abc import Iterable
from datetime import datetime, timedelta

from memlab.longterm.model import Memory
from memlab.longterm.revision import RevisionRule, speaker, statements
from memlab.text import word_key, words

# A lookup key of the revision index: (speaker, rule, "n" for non-value terms | "v" for a value, the terms:
# one, or up to `_GROUP` sorted and joined by a space).
_GROUP = 3
_Key = tuple[str, str, str, str]


@functools.lru_cache(maxsize=1 << 16)
def normalized(text: str) -> str:
    """`text`'s words, case-folded, joined by one space: what the duplicate check compares.

    "" for a memory that has no word beyond its ``speaker:`` prefix ("Alex: ;)"): it says nothing, so it
    neither repeats nor contains another (beyond the design document: its words would be the speaker's name
    alone, inside every later memory of that speaker).

    >>> normalized("Alex: I moved to LISBON."), normalized("Alex: ;)")
    ('alex i moved to lisbon', '')
    """
    key = word_key(text)
    return key if len(key.split()) > len(words(speaker(text))) else ""


def text_problem(text: object) -> str | None:
    """Why `text` is no text to store or search, or None: it must be a non-empty string that UTF-8 can encode
    (JSON may carry a lone surrogate, ``\\ud83d``, which no store, embedder or provider takes).

    >>> text_problem("I use vim"), text_problem(" "), text_problem("I use \\ud83d vim")
    (None, 'must be a non-empty string', 'is not valid text (surrogates not allowed at position 6)')
    """
    if not isinstance(text, str) or not text.strip():
        return "must be a non-empty string"
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as e:
        return f"is not valid text ({e.reason} at position {e.start})"
    return None


def content_problem(content: object) -> str | None:
    """Why `content` cannot be a memory, or None: a `text_problem`, or it has no words (`normalized` is "": it
    says nothing, and the duplicate check could not refuse its repeats). The one check of every way in: the
    service's `save`, automatic extraction's parse and the ``memory_save`` tool.

    >>> content_problem("Ann: I moved to Lisbon."), content_problem("...")
    (None, 'has no words')
    """
    return text_problem(content) or (None if normalized(str(content)) else "has no words")


class NamespaceBook:
    """One namespace's unarchived memories and the indexes over them (see the module docstring)."""

    def __init__(
        self,
        rows: Iterable[Memory],
        rule: RevisionRule,
        ttl_days: dict[str, float | None],
        archived: Iterable[str] = (),
    ) -> None:
        self.rule, self.ttl_days = rule, ttl_days
        self.rows: dict[str, Memory] = {}
        self.archived: set[str] = set(archived)  # ids of archived rows (and of rows gone from the store)
        self.position: dict[str, int] = {}
        self.changed: dict[str, None] = {}  # ids the search index has not read since they changed (ordered)
        self._next = 0
        self._words: dict[str, dict[str, None]] = {}  # word -> ids whose normalized text has it
        self._inner: dict[str, dict[str, None]] = {}  # longest inner word -> ids of texts of three words or more
        self._short: dict[str, dict[str, None]] = {}  # normalized text of one or two words -> ids
        self._speakers: Counter[str] = Counter()  # case-folded speaker -> live rows
        self._filed: dict[str, list[_Key]] = {}  # id -> its revision keys
        self._revision: dict[_Key, dict[str, None]] = {}
        self._term_rows: Counter[tuple[str, str]] = Counter()  # (speaker, term) -> statements with it
        self._expiry: list[tuple[datetime, str]] = []  # (expires at, id) of rows whose type expires
        self._expired: dict[str, datetime] = {}  # id -> when it expired
        self._expires: dict[str, datetime] = {}  # id -> when it expires (`_expires_at`), of rows whose type expires
        self._clock: datetime | None = None
        for m in rows:
            self.add(m)

    def __len__(self) -> int:
        return len(self.rows)

    # --- changes ------------------------------------------------------------------------------

    def add(self, m: Memory) -> None:
        """A new row (the last in store order); an id already here is updated in place instead."""
        if m.id in self.rows:
            self.update(m)
            return
        self.rows[m.id], self.position[m.id] = m, self._next
        self._next += 1
        self.changed[m.id] = None
        text = normalized(m.content)
        if text:
            split = text.split()
            for w in dict.fromkeys(split):
                self._words.setdefault(w, {})[m.id] = None
            self._duplicate_index(split).setdefault(_filing(split), {})[m.id] = None
        self._speakers[speaker(m.content).casefold()] += 1
        self._file(m)
        expires = self._expires_at(m)
        if expires is not None:
            self._expires[m.id] = expires
            if self._clock is not None and expires <= self._clock:
                self._expired[m.id] = expires
                self._speakers[speaker(m.content).casefold()] -= 1
            else:
                heapq.heappush(self._expiry, (expires, m.id))

    def update(self, m: Memory) -> None:
        """A row's lifecycle fields changed in the store (an access): the same content, fresher fields."""
        if m.id in self.rows:
            self.rows[m.id] = m
            self.changed[m.id] = None
            expires = self._expires_at(m)
            if expires is not None and expires != self._expires.get(m.id):  # a restored row's clock moved on
                self._expires[m.id] = expires
                heapq.heappush(self._expiry, (expires, m.id))

    def _expires_at(self, m: Memory) -> datetime | None:
        """When `m` expires (None: its type never does): ``ttl_days`` after it was said, or, when its last access
        is past that, after its last access. A row is accessed only while live, so such a row was restored
        after it expired: its clock restarted at the restore (and moves with each access since), read from
        the stored fields alone, so every service on the store agrees."""
        ttl = self.ttl_days.get(str(m.type))
        if ttl is None:
            return None
        first = m.created_at + timedelta(days=ttl)
        return first if m.last_accessed_at < first else m.last_accessed_at + timedelta(days=ttl)

    def remove(self, ids: Iterable[str]) -> None:
        """Rows archived (or gone from the store)."""
        for mid in ids:
            m = self.rows.pop(mid, None)
            if m is None:
                continue
            self.archived.add(mid)
            del self.position[mid]
            self.changed[mid] = None
            text = normalized(m.content)
            if text:
                split = text.split()
                for w in set(split):
                    _discard(self._words, w, mid)
                _discard(self._duplicate_index(split), _filing(split), mid)
            self._expires.pop(mid, None)
            if self._expired.pop(mid, None) is None:
                self._speakers[speaker(m.content).casefold()] -= 1
            for key in self._filed.pop(mid, ()):
                _discard(self._revision, key, mid)
            who = speaker(m.content)
            for s in statements(m.content):
                for t in s.terms:
                    self._term_rows[(who, t)] -= 1

    def expire(self, now: datetime) -> None:
        """Mark the rows whose type's ``ttl_days`` ran out by `now` (an earlier `now` brings them back)."""
        if self._clock is not None and now < self._clock and self._expired:
            back = [mid for mid, at in self._expired.items() if at > now and mid in self.rows]
            for mid in back:
                heapq.heappush(self._expiry, (self._expired.pop(mid), mid))
                self._speakers[speaker(self.rows[mid].content).casefold()] += 1
                self.changed[mid] = None
        self._clock = now
        while self._expiry and self._expiry[0][0] <= now:
            at, mid = heapq.heappop(self._expiry)
            if mid in self.rows and mid not in self._expired and at == self._expires.get(mid):
                self._expired[mid] = at
                self._speakers[speaker(self.rows[mid].content).casefold()] -= 1
                self.changed[mid] = None

    # --- reading ------------------------------------------------------------------------------

    def taken(self, mid: str) -> bool:
        """A row of the namespace has this id, archived or not."""
        return mid in self.rows or mid in self.archived

    def live(self, mid: str) -> bool:
        """Stored, unarchived and not expired at the last `expire` clock."""
        return mid in self.rows and mid not in self._expired

    def active(self) -> list[Memory]:
        """The live rows in store order."""
        return [m for mid, m in self.rows.items() if mid not in self._expired]

    def speakers(self) -> frozenset[str]:
        """The case-folded speakers of the live rows."""
        return frozenset(s for s, n in self._speakers.items() if n > 0 and s)

    def duplicate(self, content: str) -> Memory | None:
        """The first live row whose text contains `content`'s or is contained in it (`find_duplicate`)."""
        key = normalized(content)
        if not key:
            return None
        split = key.split()
        found: list[str] = []
        if len(split) >= 3:  # rows containing the key hold its inner words whole: those of its rarest
            rarest = min(dict.fromkeys(split[1:-1]), key=lambda w: len(self._words.get(w, ())))
            candidates: Iterable[str] = self._words.get(rarest, ())
        else:
            candidates = self.rows
        found += itertools.islice((c for c in candidates if self.live(c) and key in self._text(c)), 1)
        for w in dict.fromkeys(split):  # rows inside the key, filed under a word it holds whole
            found += itertools.islice((c for c in self._inner.get(w, ()) if self.live(c) and self._text(c) in key), 1)
        for text, ids in self._short.items():
            if text in key:
                found += itertools.islice(filter(self.live, ids), 1)
        return self.rows[min(found, key=self.position.__getitem__)] if found else None

    def _text(self, mid: str) -> str:
        return normalized(self.rows[mid].content)

    def _duplicate_index(self, split: list[str]) -> dict[str, dict[str, None]]:
        return self._inner if len(split) >= 3 else self._short

    def revision_candidates(self, new: Memory) -> list[Memory]:
        """The live rows `new` may revise under `rule` (a superset, in store order; see the module docstring)."""
        who, out = speaker(new.content), set[str]()
        for s in statements(new.content):
            if not s.values:  # the value rule links a statement that has a value to change, new and old alike
                continue
            plain = s.terms - s.values
            for rule in self._rules():
                keys = [(who, rule, "v", t) for t in plain]
                keys += [(who, rule, "n", group) for k in range(1, _GROUP + 1) for group in _groups(s.terms, k)]
                for key in keys:
                    out.update(self._revision.get(key, ()))
        return [self.rows[mid] for mid in sorted(out, key=self.position.__getitem__) if self.live(mid)]

    # --- the revision index -----------------------------------------------------------------

    def _rules(self) -> list[str]:
        """The rules a statement can take part in: the value rule, unless it is off."""
        return ["value"] if self.rule.value_min_shared is not None else []

    def _file(self, m: Memory) -> None:
        """File each statement of `m` under the keys that any statement it may revise looks up."""
        who, keys = speaker(m.content), []
        found = statements(m.content)
        for s in found:
            for t in s.terms:
                self._term_rows[(who, t)] += 1
        for s in found:
            plain = s.terms - s.values
            for rule in self._rules():
                if not s.values:  # the value rule links a statement that has a value to change
                    continue
                missing = self.rule.value_max_missing
                if len(plain) > missing:  # it may miss `missing` of these: k of any `missing` + k are shared
                    k = min(_GROUP, len(plain) - missing)
                    chosen = sorted(plain, key=lambda t: (self._term_rows[(who, t)], t))[: missing + k]
                    keys += [(who, rule, "n", group) for group in _groups(chosen, k)]
                else:  # it may miss all of them: any shared term that is not a value of both
                    keys += [(who, rule, "n", t) for t in plain] + [(who, rule, "v", t) for t in s.values]
        keys = list(dict.fromkeys(keys))
        self._filed[m.id] = keys
        for key in keys:
            self._revision.setdefault(key, {})[m.id] = None


def _groups(terms: Iterable[str], k: int) -> list[str]:
    """Each `k` of `terms` as one key, the same whichever order they come in."""
    return [" ".join(group) for group in itertools.combinations(sorted(terms), k)]


def _filing(split: list[str]) -> str:
    """Where a normalized text is filed for the duplicate check: its longest inner word, or itself if it has none."""
    return max(split[1:-1], key=lambda w: (len(w), w)) if len(split) >= 3 else " ".join(split)


def _discard(index: dict[str, dict[str, None]] | dict[_Key, dict[str, None]], key: object, mid: str) -> None:
    ids = index.get(key)  # type: ignore[call-overload]
    if ids is not None:
        ids.pop(mid, None)
        if not ids:
            del index[key]  # type: ignore[arg-type]
