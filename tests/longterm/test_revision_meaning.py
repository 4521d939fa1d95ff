"""Revision links by meaning made at save time (`longterm.revision.kind=meaning`) and read by stage `revisions`."""

from __future__ import annotations

from datetime import timedelta

import pytest
from requires import needs_minilm

from memlab.embed import MiniLMEmbedder
from memlab.longterm import MemoryType, RevisionRule
from memlab.longterm.model import SOURCE_AUTO_EXTRACT
from memlab.longterm.rerank import Revisions, Updates, build_pipeline
from memlab.longterm.revision_meaning import statements

from .support import T0, context

pytestmark = [
    needs_minilm,
    pytest.mark.xdist_group("minilm"),  # the worker that has loaded torch and the model (tests/embed/test_minilm.py)
]
RULE = RevisionRule(kind="meaning", similarity=0.3, candidates=2)
CHATTER = ("Yusuf: My sister Grace is training to be a nurse.", "Yusuf: The bakery on our street does great rye bread.")


def linked_service(make_service, rule: RevisionRule = RULE, question_share: float = 1.0):
    pipeline = build_pipeline(("decay", "revisions", "dedup"))
    pipeline[1] = Revisions(depth=3, question_share=question_share)
    return make_service(index="hybrid", revision=rule, rerank=pipeline)


def saved(service, text: str, days: int, evidence: str):
    ctx = context(now=T0 + timedelta(days=days))
    return service.save(ctx, text, MemoryType.FACT, source=SOURCE_AUTO_EXTRACT, evidence=(evidence,)).memory


def ranked(service, question: str, days: int = 100) -> list[str]:
    return [h.memory.id for h in service.search(context(now=T0 + timedelta(days=days)), question, 3, touch=False)]


def test_a_revision_sharing_no_word_is_linked_and_read_first(make_service) -> None:
    service = linked_service(make_service)
    old = saved(service, "Yusuf: I live in Manchester, near the canal.", 0, "D1:1")
    for i, text in enumerate(CHATTER):
        saved(service, text, 1, f"D1:{i + 2}")
    new = saved(service, "Yusuf: Unpacking the last box in our Edinburgh flat tonight.", 60, "D2:1")
    assert new.revises == (old.id,)  # the chatter is further than `similarity` from it
    order = ranked(service, "Which city does Yusuf live in?")
    assert order.index(new.id) == order.index(old.id) - 1
    service.revision_rule = RevisionRule()  # the value rule: no value changes in words it can compare
    assert saved(service, "Yusuf: Unpacking the boxes of our Edinburgh home.", 61, "D2:2").revises == ()


def test_same_topic_chatter_is_linked_but_not_pulled_above_the_answer(make_service) -> None:
    """The later remark is close to the statement (a link) but further from the question than the answer."""
    for share, pulled in ((1.0, False), (0.0, True)):
        service = linked_service(make_service, question_share=share)
        answer = saved(service, "Ann: I support Riverside FC and go to every home game.", 0, "D1:1")
        saved(service, "Ann: My brother runs a bike shop in Hull.", 1, "D1:2")
        chatter = saved(service, "Ann: Riverside lost again on Sunday, what a terrible game.", 30, "D2:1")
        assert chatter.revises == (answer.id,)
        order = ranked(service, "Which football team does Ann support?")
        assert (order[0] == chatter.id) is pulled, share
        assert order[int(pulled)] == answer.id


def test_another_speakers_statement_is_never_linked(make_service) -> None:
    service = linked_service(make_service)
    saved(service, "Yusuf: I live in Manchester, near the canal.", 0, "D1:1")
    assert saved(service, "Priya: I live in Manchester too, near the canal.", 5, "D1:2").revises == ()


def test_a_save_compares_with_at_most_window_statements(make_service) -> None:
    """A save's cost is bounded by `window`, however many memories its speaker has: one product per statement."""
    service = linked_service(make_service, RevisionRule(kind="meaning", similarity=0.3, candidates=2, window=8))
    for i in range(40):
        saved(service, f"Yusuf: On walk number {i} of the year I counted {i + 3} herons by the canal.", i, f"D{i}:1")
    links = service._links
    before = links.compared
    saved(service, "Yusuf: I counted a hundred herons by the canal this morning.", 50, "D50:1")
    assert links.compared - before == 8  # one statement against the speaker's last 8, not the 40 filed


def test_a_store_read_again_is_filed_again(make_service) -> None:
    """Another writer's rows (a new book of the namespace) are filed before the next save compares."""
    service = linked_service(make_service)
    old = saved(service, "Yusuf: I live in Manchester, near the canal.", 0, "D1:1")
    other = linked_service(make_service)
    other.store = service.store
    new = saved(other, "Yusuf: Unpacking the last box in our Edinburgh flat tonight.", 60, "D2:1")
    assert new.revises == (old.id,)


def test_with_both_rules_by_meaning_each_statement_is_embedded_once(make_service, monkeypatch) -> None:
    """The links by meaning (at save) and stage `updates` (at search) read one cache of the namespace's statement
    vectors by MiniLM: no sentence goes through the model twice; another service keeps its own cache."""
    embedded: list[str] = []
    forward = MiniLMEmbedder._embed
    monkeypatch.setattr(MiniLMEmbedder, "_embed", lambda self, texts: (embedded.extend(texts), forward(self, texts))[1])

    def both_rules():
        service = linked_service(make_service)
        service.rerank = [*service.rerank[:1], Updates(embedder="minilm", relevance_share=0.0), *service.rerank[1:]]
        texts = ["Yusuf: I live in Manchester, near the canal.", *CHATTER, "Yusuf: Our new home is in Edinburgh."]
        for day, text in enumerate(texts):
            saved(service, text, day * 20, f"D{day}:1")
        for question in ("Which city does Yusuf live in?", "Where does Grace train?"):
            ranked(service, question)
        return {s for text in texts for s in statements(text, RULE.min_words)}

    said = both_rules()
    assert said <= set(embedded)  # the links embedded every statement
    assert len(embedded) == len(set(embedded)), [t for t in set(embedded) if embedded.count(t) > 1]
    embedded.clear()
    both_rules()
    assert said <= set(embedded)  # a second service (a second run in this process) shares none of the first's
