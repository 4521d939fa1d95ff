"""memlab.longterm.updates: the newer of two memories about the same thing is read first, decided from meaning."""

from __future__ import annotations

from datetime import timedelta

import pytest
from requires import needs_minilm

from memlab.errors import MemlabError
from memlab.longterm import MemoryType
from memlab.longterm.model import SOURCE_AUTO_EXTRACT
from memlab.longterm.rerank import Decay, Dedup, Updates
from memlab.longterm.statement_vectors import RuleVectors
from memlab.longterm.updates import revises, statements

from .support import T0, context

OLD = "Priya: My sister Asha is studying law at Leeds."
NEW = "Priya: Big news, my sister Asha is studying medicine at Leeds, she dropped the law course."
LATER = "Priya: Asha studying medicine at Leeds is going well."


def _save(service, text: str, days: int):
    ctx = context(now=T0 + timedelta(days=days))
    return service.save(ctx, text, MemoryType.FACT, source=SOURCE_AUTO_EXTRACT).memory


def test_statements_drop_the_speaker_and_questions() -> None:
    assert statements("Priya: I moved to Leeds. Have you been? It rains.") == ["I moved to Leeds.", "It rains."]


@pytest.mark.parametrize(
    ("stage", "new_speaker", "moved"),
    [
        (True, "Priya", True),
        (False, "Priya", False),  # the stage off
        (True, "Tom", False),  # a person revises their own statements
    ],
)
def test_the_later_close_statement_goes_above_the_one_it_revises(make_service, stage, new_speaker, moved) -> None:
    service = make_service(index="hybrid")
    service.rerank = [Decay(), *([Updates(similarity=0.3)] if stage else []), Dedup()]
    old = _save(service, OLD, 0)
    new = _save(service, NEW.replace("Priya", new_speaker, 1), 30)
    _save(service, "Priya: The weather in Leeds was grey all week and the trains were late.", 40)
    ranked = [h.memory.id for h in service.search(context(now=T0 + timedelta(days=50)), "What does Asha study?", 3)]
    assert ranked.index(old.id) < ranked.index(new.id) or moved  # by relevance the older one is first
    if moved:
        assert ranked[0] == new.id and ranked[1] == old.id


def test_the_latest_of_several_revisions_goes_first(make_service) -> None:
    service = make_service(index="hybrid")
    service.rerank = [Decay(), Updates(similarity=0.3), Dedup()]
    old = _save(service, OLD, 0)
    _save(service, NEW, 30)
    latest = _save(service, "Priya: Asha is studying architecture at Leeds now, after a year of medicine.", 60)
    ranked = [h.memory.id for h in service.search(context(now=T0 + timedelta(days=70)), "What is Asha studying?", 3)]
    assert ranked.index(latest.id) < ranked.index(old.id)


def test_a_repeat_revises_nothing(make_service) -> None:
    """A later sentence whose every term the earlier memory already has says nothing new."""
    service = make_service(index="hybrid")
    old, repeat = _save(service, OLD, 0), _save(service, "Priya: My sister Asha is studying law.", 20)
    new = _save(service, NEW, 30)
    assert not revises(repeat, old, service.embedder, 0.3)
    assert revises(new, old, service.embedder, 0.3)
    assert not revises(old, new, service.embedder, 0.3)  # only the later one revises


def test_memories_of_one_turn_never_revise_each_other(make_service) -> None:
    service = make_service(index="hybrid")
    a = service.save(context(now=T0), OLD, evidence=["D1:1"]).memory
    b = service.save(context(now=T0 + timedelta(days=1)), NEW, evidence=["D1:1"]).memory
    assert not revises(b, a, service.embedder, 0.3)


@pytest.mark.parametrize(
    ("question", "present_tense_only", "moved"),
    [
        ("What is Asha studying?", True, True),
        ("What did Asha study?", True, False),  # a past-tense question asks about an event: left alone
        ("What did Asha study?", False, True),
    ],
)
def test_present_tense_only_reorders_questions_about_now(make_service, question, present_tense_only, moved) -> None:
    service = make_service(index="hybrid")
    service.rerank = [Decay(), Updates(similarity=0.3, present_tense_only=present_tense_only), Dedup()]
    old = _save(service, OLD, 0)
    new = _save(service, NEW, 30)
    ranked = [h.memory.id for h in service.search(context(now=T0 + timedelta(days=50)), question, 2)]
    assert ranked[0] == (new.id if moved else old.id)


def test_each_memory_is_embedded_once_across_questions(make_service) -> None:
    """The stage's statement vectors are kept with the namespace: a second question embeds no memory again."""
    service = make_service(index="hybrid")
    service.rerank = [Decay(), Updates(similarity=0.3), Dedup()]
    _save(service, OLD, 0)
    _save(service, NEW, 30)
    texts: list[str] = []
    embed = service.embedder.embed
    service.embedder.embed = lambda batch: (texts.extend(batch), embed(batch))[1]
    for _ in range(2):
        texts.clear()
        service.search(context(now=T0 + timedelta(days=50)), "What is Asha studying?", 2)
        stated = [t for t in texts if t in statements(OLD) + statements(NEW)]
        assert stated == (statements(OLD) + statements(NEW) if _ == 0 else [])


@pytest.mark.parametrize(("question_share", "moved"), [(None, True), (0.5, True), (10.0, False)])
def test_question_share_keeps_a_later_memory_that_answers_less(make_service, question_share, moved) -> None:
    """With `question_share`, the later memory must be about as close to the question as the one it revises."""
    service = make_service(index="hybrid")
    service.rerank = [Decay(), Updates(similarity=0.3, question_share=question_share), Dedup()]
    old = _save(service, OLD, 0)
    new = _save(service, NEW, 30)
    _save(service, "Priya: The weather in Leeds was grey all week and the trains were late.", 40)
    ranked = [h.memory.id for h in service.search(context(now=T0 + timedelta(days=50)), "What does Asha study?", 3)]
    assert ranked.index(new.id) < ranked.index(old.id) if moved else ranked.index(old.id) < ranked.index(new.id)


def test_an_unknown_stage_embedder_is_refused() -> None:
    with pytest.raises(MemlabError, match="embedder"):
        Updates(embedder="word2vec")


@needs_minilm
@pytest.mark.xdist_group("minilm")  # the worker that has loaded torch and the model (tests/embed/test_minilm.py)
def test_minilm_links_a_revision_that_shares_no_word(make_service) -> None:
    """ "I live in Manchester" -> "Unpacking the last box in the Edinburgh flat": the hashing embedder's cosine
    cannot link them, all-MiniLM-L6-v2's can (stage knob `embedder=minilm`)."""
    service = make_service(index="hybrid")
    old = _save(service, "Yusuf: I live in Manchester, near the canal.", 0)
    new = _save(service, "Yusuf: Our new home is a flat in Edinburgh.", 60)
    meaning = RuleVectors(service.embedder)("minilm")
    assert revises(new, old, meaning, 0.3)
    assert not revises(new, old, service.embedder, 0.3)
