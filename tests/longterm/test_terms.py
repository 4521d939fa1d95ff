"""`NamespaceBook`: its lookups equal the scans they replace, and the service does work in O(change)."""

from __future__ import annotations

import random
from dataclasses import replace
from datetime import timedelta

import pytest

from memlab.longterm import LongTermMemoryService, Memory, MemoryStore, MemoryType
from memlab.longterm.revision import RevisionRule, revised_ids
from memlab.longterm.service import find_duplicate
from memlab.longterm.terms import NamespaceBook
from tests.longterm.support import T0, context

NS = ("agent:chat", "user:u1", "memories")
WORDS = ["tea", "coffee", "moved", "Lisbon", "Krakow", "team", "five", "seven", "engineers", "editor", "Helix"]
WORDS += ["Vim", "again", "instead", "cat", "category"]
RULES = [
    RevisionRule(),
    RevisionRule(value_max_missing=0),
    RevisionRule(value_min_shared=None),
    RevisionRule(value_max_missing=2),
]


def _memory(i: int, content: str, kind: MemoryType = MemoryType.FACT, days: int = 0) -> Memory:
    at = T0 + timedelta(days=days, minutes=i)
    return Memory(f"m{i}", NS, content, kind, "agent_tool", "chat", at, at, evidence=(f"D1:{i}",))


def _add_then_archive(
    book: NamespaceBook, live: list[Memory], new: Memory, rng: random.Random, archived: int
) -> list[Memory]:
    """`new` added to the book, then `archived` random live rows archived (when more are live): the rows live after."""
    book.add(new)
    live = [*live, new]
    if archived and len(live) > archived:
        gone = rng.sample(live, archived)
        book.remove(m.id for m in gone)
        live = [m for m in live if m not in gone]
    return live


def _turn(rng: random.Random) -> str:
    sentences = [
        " ".join(rng.choice(WORDS) for _ in range(rng.randint(2, 7))).capitalize() + rng.choice([".", "!", "?"])
        for _ in range(rng.randint(1, 3))
    ]
    who = rng.choice(["Alex: ", "Sam: ", ""])
    return who + " ".join(sentences)


@pytest.mark.parametrize("rule", RULES, ids=["defaults", "strict", "off", "loose"])
def test_the_books_lookups_equal_the_scans_they_replace(rule: RevisionRule) -> None:
    """Revision candidates then `revised_ids`, and the duplicate lookup, give what scanning every live row gives,
    through adds, archives and expiry, on texts built to share words, values and cues."""
    rng = random.Random(7)
    types = {str(MemoryType.PROCEDURE): 30.0}
    book = NamespaceBook([], rule, types)
    live: list[Memory] = []
    links = duplicates = 0
    for i in range(400):
        now = T0 + timedelta(days=i // 4, minutes=i)
        book.expire(now)
        live = [m for m in live if m.type != MemoryType.PROCEDURE or now - m.created_at < timedelta(days=30)]
        kind = MemoryType.PROCEDURE if i % 5 == 0 else MemoryType.FACT
        new = _memory(i, _turn(rng), kind, days=i // 4)
        expected = revised_ids(new, live, rule)
        assert revised_ids(new, book.revision_candidates(new), rule, book.speakers()) == expected
        assert book.duplicate(new.content) == find_duplicate(new.content, live)
        links += len(expected)
        duplicates += find_duplicate(new.content, live) is not None
        live = _add_then_archive(book, live, new, rng, 2 if i % 7 == 0 else 0)
        assert [m.id for m in book.active()] == [m.id for m in live]
    assert duplicates > 10 and (links > 20 or rule.value_min_shared is None), (duplicates, links)


def test_duplicates_are_substrings_as_the_design_document_says() -> None:
    """ "cat" is in "category" (the document's substring match, over case-folded words); a memory with no word
    beyond its speaker contains nothing."""
    stored = [_memory(0, "Alex: The category is open."), _memory(1, "Alex: ;)")]
    book = NamespaceBook(stored, RevisionRule(), {})
    for content in ("Alex: I moved to Lisbon", "Alex: ;)", "Sam: the category is open", "Alex: cat"):
        assert find_duplicate(content, stored) is None and book.duplicate(content) is None, content
    for content in ("alex: THE CATEGORY", "Alex: the cat", "alex the category is open", "the cat", "ex: the cat"):
        assert find_duplicate(content, stored) is stored[0] and book.duplicate(content) == stored[0], content
    assert book.duplicate("Alex: The category is open. Come in!") == stored[0]  # it contains the stored one
    assert book.duplicate("Sam said Alex: the category is open, twice") == stored[0]


def test_the_substring_lookup_equals_the_scan_on_words_that_are_inside_each_other() -> None:
    """Texts of one to six words from a vocabulary whose words sit inside each other ("at" in "cat" in
    "category"), so that a text inside another often starts or ends mid-word, through adds and archives."""
    rng = random.Random(11)
    vocabulary = ["a", "at", "cat", "category", "ca", "t", "go", "gory", "ego", "r"]
    book = NamespaceBook([], RevisionRule(value_min_shared=None), {})
    live: list[Memory] = []
    duplicates = 0
    for i in range(600):
        text = "Alex: " + " ".join(rng.choices(vocabulary, k=rng.randint(1, 6)))
        if rng.random() < 0.3:  # some without the speaker: its name is then cut or missing in the stored texts
            text = text.removeprefix("Alex: ")
        found = find_duplicate(text, live)
        assert book.duplicate(text) == found, text
        duplicates += found is not None
        live = _add_then_archive(book, live, _memory(i, text), rng, 3 if i % 5 == 0 else 0)
    assert 100 < duplicates < 590, duplicates


def test_a_tool_save_is_refused_for_a_substring_of_a_stored_memory(make_service) -> None:
    """The defect: whole words only ("I have a category of pens" was saved beside "I have a cat")."""
    service = make_service()
    assert service.save(context(), "Joanna: I have a cat.").saved
    assert not service.save(context(), "Joanna: I have a category of pens.").saved  # the document's substring
    assert not service.save(context(), "joanna: i have a").saved  # inside the stored one
    assert service.save(context(), "Joanna: I have two dogs.").saved


class _Counting(MemoryStore):
    """A store that counts the rows it lists."""

    listed = 0

    def list(self, namespace, *, archived=False):  # type: ignore[no-untyped-def]
        rows = super().list(namespace, archived=archived)
        self.listed += len(rows)
        return rows


def test_saves_and_session_starts_read_the_store_once_and_the_index_only_what_changed(
    make_service, monkeypatch
) -> None:
    store = _Counting()
    service: LongTermMemoryService = make_service(index="hybrid", store=store)
    updated: list[int] = []
    update = LongTermMemoryService._update

    def counted(self, entry, gone, new) -> None:  # type: ignore[no-untyped-def]
        updated.append(len(gone) + len(new))
        update(self, entry, gone, new)

    monkeypatch.setattr(LongTermMemoryService, "_update", counted)
    for i in range(30):
        service.save(context(now=T0 + timedelta(minutes=i)), f"I keep pet number {i} in the garden.")
    assert store.listed == 0  # an empty namespace read once; every save after it kept the book in place
    for i in range(5):
        ctx = context(now=T0 + timedelta(hours=1, minutes=i))
        service.load_memories(ctx, "Which pets do I keep?")
        service.save(ctx, f"Alex: the garden has {i + 40} roses.")
    assert store.listed == 0
    assert updated == [30, 1, 1, 1, 1]  # the first search indexes all; each later one only the memory saved since


def test_a_session_start_sees_what_another_service_archived_and_added(make_service) -> None:
    store = MemoryStore()
    a, b = make_service(store=store), make_service(store=store)
    kept = a.save(context(), "I live in Lisbon.").memory
    gone = a.save(context(), "My editor is Vim.").memory
    assert {h.memory.id for h in a.load_memories(context(), "Where do I live? Which editor?")} == {kept.id, gone.id}
    b.memories(context())
    b._archive(gone.namespace, [gone.id])
    added = b.save(context(), "My editor is Helix.").memory
    found = {h.memory.id for h in a.load_memories(context(), "Where do I live? Which editor?")}
    assert gone.id not in found and {kept.id, added.id} <= found


def test_a_replaced_revision_rule_files_the_rows_again(make_service) -> None:
    service = make_service()
    service.save(context(), "Alex: There are five engineers on my team.")
    service.revision_rule = replace(service.revision_rule, value_max_missing=0)
    later = service.save(context(now=T0 + timedelta(days=1)), "Alex: There are seven engineers on my team.")
    assert later.memory.revises  # still linked: filed again under the new rule
