"""Revision links decided at save time (`memlab.longterm.revision`) and read first at search."""

from __future__ import annotations

from datetime import timedelta

import pytest

from memlab.errors import MemlabError
from memlab.longterm import MemoryType
from memlab.longterm.model import SOURCE_AUTO_EXTRACT
from memlab.longterm.revision import RevisionRule

from .support import T0, context


def saved(service, text: str, days: int, evidence: str, type: MemoryType = MemoryType.FACT):
    ctx = context(now=T0 + timedelta(days=days))
    return service.save(ctx, text, type, source=SOURCE_AUTO_EXTRACT, evidence=(evidence,)).memory


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("user: There are five engineers on my team.", "user: After the reorg there are seven engineers on my team."),
        ("Ann: I live in Lisbon.", "Ann: We just moved, so I live in Krakow now."),
    ],
)
def test_a_changed_value_links_the_new_memory_to_the_old(make_service, old, new) -> None:
    service = make_service(index="hybrid")
    first = saved(service, old, 0, "D1:1")
    second = saved(service, new, 9, "D2:1")
    assert second.revises == (first.id,)
    assert [m.revises for m in service.store.list(first.namespace)] == [(), (first.id,)]  # persisted with the value


@pytest.mark.parametrize(
    ("old", "new", "why"),
    [
        ("Caroline: Thanks, Mel!", "Caroline: Thanks, Melanie!", "whom one addresses (a speaker) is no value"),
        ("Ann: Do you live in Lisbon?", "Ann: I live in Krakow.", "a question states nothing"),
        ("Bob: I live in Lisbon.", "Ann: I live in Krakow.", "another speaker"),
        ("Ann: I flew to Lisbon last week.", "Ann: I flew to Krakow yesterday.", "dated sentences tell events"),
        ("Ann: I live in Lisbon.", "Ann: I love Krakow in spring.", "no frame term shared"),
        ("Ann: I live in Lisbon.", "Ann: I live in Lisbon, still.", "the same value"),
        ("Ann: I prefer long answers.", "Ann: I've changed my mind: I prefer terse answers now.", "no cue rule"),
        ("user: CI is green after pinning the image.", "user: CI broke again, this time I fixed the cache.", "no cue"),
    ],
)
def test_what_is_not_a_revision(make_service, old, new, why) -> None:
    service = make_service(index="hybrid")
    saved(service, "Melanie: Hi Caroline, I painted a lake sunrise.", 0, "D1:0")
    saved(service, old, 0, "D1:1")
    assert saved(service, new, 9, "D2:1").revises == (), why


def test_the_rules_follow_the_revision_rule_in_force(make_service) -> None:
    from memlab.longterm import RevisionRule

    service = make_service(index="hybrid")
    service.revision_rule = RevisionRule(value_min_shared=None)  # the rule off
    saved(service, "user: There are five engineers on my team.", 0, "D1:1")
    assert saved(service, "user: After the reorg there are seven engineers on my team.", 9, "D2:1").revises == ()


def test_memories_of_one_turn_never_revise_each_other(make_service) -> None:
    service = make_service(index="hybrid")
    saved(service, "user: I live in Lisbon.", 0, "D1:1")
    assert saved(service, "user: We just moved, so I live in Krakow now.", 0, "D1:1").revises == ()


def test_the_reviser_is_read_first_even_without_a_word_of_the_question(make_service) -> None:
    service = make_service(index="hybrid")
    old = saved(service, "user: My team is five engineers, all remote.", 0, "D1:1")
    saved(service, "user: My dog is called Biscuit.", 1, "D1:2")
    new = saved(service, "user: After the reorg there are seven engineers on my team.", 9, "D2:1")
    assert new.revises == (old.id,)
    later = context(now=T0 + timedelta(days=10))
    question = "Is my remote crew big?"  # only the old statement has a word of it
    ranked = [h.memory.id for h in service.search(later, question, 3, touch=False)]
    assert ranked.index(new.id) == ranked.index(old.id) - 1
    service.rerank = [s for s in service.rerank if s.name != "revisions"]
    unlinked = [h.memory.id for h in service.search(later, question, 3, touch=False)]
    assert unlinked[0] == old.id and (new.id not in unlinked or unlinked.index(new.id) > 0)


def test_an_unknown_kind_or_embedder_is_refused_when_the_rule_is_built() -> None:
    with pytest.raises(MemlabError, match=r"revision\.embedder: 'word2vec'"):
        RevisionRule(kind="meaning", embedder="word2vec")
    with pytest.raises(MemlabError, match=r"revision\.kind: 'cues'"):
        RevisionRule(kind="cues")
