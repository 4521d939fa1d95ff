"""Decay, cleanup, archive, restore, expiry and max-items on the virtual clock, over months."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest

from memlab.errors import MemlabError
from memlab.longterm import DEFAULT_TYPES, MemoryStore, MemoryType, decayed_score
from memlab.longterm.model import SOURCE_AUTO_EXTRACT

from .support import T0, context

DAY = timedelta(days=1)
EPISODE_HALF_LIFE = DEFAULT_TYPES[MemoryType.EPISODE].half_life_days
QUARTERS = 28  # seven years: the first episodes fade below the archive threshold


def save(service, text: str, kind: MemoryType, at, user: str = "u1"):
    return service.save(context(user, now=at), text, kind, source=SOURCE_AUTO_EXTRACT).memory


def test_relevance_decays_by_half_life_and_an_access_restarts_the_clock(make_service) -> None:
    service = make_service()
    m = save(service, "Ann ran the Berlin marathon", MemoryType.EPISODE, T0)
    policy = DEFAULT_TYPES[MemoryType.EPISODE]
    half = T0 + EPISODE_HALF_LIFE * DAY
    assert decayed_score(m, half, policy) == pytest.approx(0.5)
    assert decayed_score(m, T0 + 2 * EPISODE_HALF_LIFE * DAY, policy) == pytest.approx(0.25)
    # Retrieval at the half-life stores the decayed score and restarts the clock.
    [hit] = service.search(context(now=half), "Berlin marathon", 5)
    assert hit.memory.id == m.id
    [stored] = service.memories(context())
    assert (stored.access_count, stored.last_accessed_at) == (1, half)
    assert stored.relevance_score == pytest.approx(0.5)
    assert decayed_score(stored, half + EPISODE_HALF_LIFE * DAY, policy) == pytest.approx(0.25)
    fact = save(service, "Ann is a nurse", MemoryType.FACT, T0)
    assert decayed_score(fact, T0 + 3650 * DAY, DEFAULT_TYPES[MemoryType.FACT]) == 1.0  # facts are stable


def test_decay_breaks_ties_but_never_buries_a_more_relevant_memory(make_service) -> None:
    service = make_service()
    episode = save(service, "Ann adopted a dog named Rex in Berlin", MemoryType.EPISODE, T0)
    fact = save(service, "Ann adopted a dog in Berlin", MemoryType.FACT, T0)
    query = "Ann adopted a dog named Rex in Berlin"
    years_later = context(now=T0 + 4 * EPISODE_HALF_LIFE * DAY)
    assert [h.memory.id for h in service.search(context(now=T0), query, 2, touch=False)] == [episode.id, fact.id]
    # Four half-lives on, the episode has faded to 1/16 but still answers the query best.
    assert [h.memory.id for h in service.search(years_later, query, 2, touch=False)] == [episode.id, fact.id]
    # Between equally relevant memories the fresher one comes first.
    newer = save(service, "Ann adopted a dog named Rex in Berlin", MemoryType.EPISODE, T0 + 3 * EPISODE_HALF_LIFE * DAY)
    assert [h.memory.id for h in service.search(years_later, query, 2, touch=False)] == [newer.id, episode.id]


def test_prior_weight_one_lets_decay_scale_relevance(make_service) -> None:
    from memlab.longterm import IndexSpec, LongTermMemoryService
    from memlab.longterm.rerank import Decay, Dedup

    base = make_service()
    service = LongTermMemoryService(
        base.store,
        base.embedder,
        base.llm,
        defaults=base.defaults,
        index=IndexSpec(kind="exact"),
        rerank=[Decay(prior_weight=1.0), Dedup()],
    )
    episode = save(service, "Ann adopted a dog named Rex in Berlin", MemoryType.EPISODE, T0)
    fact = save(service, "Ann adopted a dog in Berlin", MemoryType.FACT, T0)
    later = context(now=T0 + 4 * EPISODE_HALF_LIFE * DAY)
    hits = service.search(later, "Ann adopted a dog named Rex in Berlin", 2, touch=False)
    assert [h.memory.id for h in hits] == [fact.id, episode.id]
    assert hits[1].score == pytest.approx(hits[1].similarity * DEFAULT_TYPES[MemoryType.EPISODE].weight / 16)


def test_cleanup_archives_faded_unused_memories_over_months_and_restore_brings_them_back(make_service) -> None:
    service = make_service()
    saved = []
    for quarter in range(QUARTERS):  # one episode a quarter, for years
        now = T0 + 91 * quarter * DAY
        saved.append(
            save(service, f"In quarter {quarter} Ann visited city number {quarter} on a trip", MemoryType.EPISODE, now)
        )
        if quarter == 0:
            for _ in range(3):  # the first episode is used often, so it survives its fading
                service.search(context(now=now), "quarter 0 city number 0", 1)
        service.cleanup(context(now=now))
    end = T0 + 91 * (QUARTERS - 1) * DAY
    archived = {m.id for m in service.archived(context())}
    policy = DEFAULT_TYPES[MemoryType.EPISODE]
    expected = {m.id for m in saved[1:] if decayed_score(m, end, policy) < service.rules.archive_threshold}
    assert expected and archived == expected  # faded and rarely used: archived, nothing else
    assert saved[0].id not in archived  # faded but accessed 3 times
    assert len(service.memories(context())) + len(archived) == QUARTERS  # archived, never deleted
    lost = saved[1]
    assert lost.id in archived
    hits = service.search(context(now=end), "quarter 1 city number 1", QUARTERS, touch=False)
    assert lost.id not in {h.memory.id for h in hits}
    assert service.restore(context(now=end), [lost.id]) == 1
    top = service.search(context(now=end), "In quarter 1 Ann visited city number 1 on a trip", 1)[0]
    assert top.memory.id == lost.id and top.memory.relevance_score == 1.0


@pytest.mark.parametrize("index", ["exact", "hybrid"])
def test_a_memory_of_relevance_zero_is_no_hit_and_fades(make_service, index: str) -> None:
    """The defect: an unrelated memory came back with relevance 0, and each such search counted as an access
    (restarting its decay), so it was never archived."""
    service = make_service(index)
    trip = save(service, "Ann went to Paris for a conference", MemoryType.EPISODE, T0)
    for year in range(1, 4):
        assert service.search(context(now=T0 + 365 * year * DAY), "what python version should I install", 10) == []
    assert service.memories(context())[0].access_count == 0
    assert service.cleanup(context(now=T0 + 3650 * DAY)) == [trip.id]


def test_procedures_expire(make_service) -> None:
    service = make_service()
    proc = save(service, "Ann fixed the printer by reinstalling the driver", MemoryType.PROCEDURE, T0)
    ttl = DEFAULT_TYPES[MemoryType.PROCEDURE].ttl_days
    assert service.search(context(now=T0 + (ttl - 1) * DAY), "printer driver", 1, touch=False)
    assert service.search(context(now=T0 + (ttl + 1) * DAY), "printer driver", 1, touch=False) == []
    assert service.cleanup(context(now=T0 + (ttl + 1) * DAY)) == [proc.id]
    assert [m.id for m in service.archived(context())] == [proc.id]


def _a_restored_procedure_lives_again(make_service, store: MemoryStore) -> None:
    """Restore restarts the expiry clock too: a restored expired procedure was never found and the next cleanup
    archived it again. Read from the stored row, so another service on the store agrees."""
    service = make_service(store=store)
    proc = save(service, "Ann fixed docker by moving it to port 8081", MemoryType.PROCEDURE, T0)
    ttl = DEFAULT_TYPES[MemoryType.PROCEDURE].ttl_days
    back = T0 + (ttl + 10) * DAY
    assert service.cleanup(context(now=back)) == [proc.id]
    assert service.restore(context(now=back), [proc.id]) == 1
    for reader in (service, make_service(store=store)):
        assert [h.memory.id for h in reader.search(context(now=back + DAY), "docker port", 3)] == [proc.id]
        assert reader.cleanup(context(now=back + DAY)) == []
    assert make_service(store=store).search(context(now=back + (ttl + 2) * DAY), "docker port", 3) == []
    assert service.search(context(now=back + (ttl + 2) * DAY), "docker port", 3) == []  # ttl after its last use


def test_a_restored_procedure_lives_again(make_service, store: MemoryStore) -> None:
    _a_restored_procedure_lives_again(make_service, store)


def test_a_restored_procedure_lives_again_in_memory(make_service) -> None:
    _a_restored_procedure_lives_again(make_service, MemoryStore())


def test_max_items_archives_the_lowest_scoring(make_service) -> None:
    service = make_service(agents={"chat": {"namespace": "chat", "max_items": 5}})
    saved = [
        save(service, f"Ann went to concert number {i} downtown", MemoryType.EPISODE, T0 + 20 * i * DAY)
        for i in range(8)
    ]
    active = {m.id for m in service.memories(context())}
    assert active == {m.id for m in saved[3:]}  # the three oldest (most decayed) went to the archive
    assert {m.id for m in service.archived(context())} == {m.id for m in saved[:3]}
    other = context(user="u2")
    service.save(other, "Bob likes jazz", MemoryType.PREFERENCE)
    assert len(service.memories(other)) == 1  # the cap is per user


def test_max_items_weighs_the_types(make_service) -> None:
    """The prior that chooses what max_items archives is type weight x decay: of two fresh memories the
    PROCEDURE (weight 0.9) goes, not the FACT (1.0)."""
    service = make_service(agents={"chat": {"namespace": "chat", "max_items": 1}})
    fact = save(service, "Ann is a Java backend developer", MemoryType.FACT, T0)
    proc = save(service, "Ann fixed docker by changing the port to 8081", MemoryType.PROCEDURE, T0)
    assert [m.id for m in service.memories(context())] == [fact.id]
    assert [m.id for m in service.archived(context())] == [proc.id]


def test_a_new_preference_supersedes_the_old_one(make_service) -> None:
    service = make_service()
    old = save(service, "Ann prefers tea to coffee in the morning", MemoryType.PREFERENCE, T0)
    new = save(service, "Ann prefers tea to coffee in the morning now", MemoryType.PREFERENCE, T0 + 40 * DAY)
    assert [m.id for m in service.memories(context())] == [new.id]
    assert [m.id for m in service.archived(context())] == [old.id]
    other = save(service, "Ann dislikes loud bars", MemoryType.PREFERENCE, T0 + 41 * DAY)
    assert {m.id for m in service.memories(context())} == {new.id, other.id}


def test_a_session_start_sees_what_another_service_archived_and_a_cleanup_leaves_the_copy_current(
    make_service,
) -> None:
    """Another writer on the same store: its archive raises the namespace's version, so the next
    session start reads the namespace again; this service's own cleanup leaves its copy current."""
    store = make_service().store
    mine = make_service(store=store)
    kept = save(mine, "Ann keeps bees in the garden", MemoryType.FACT, T0)
    gone = save(mine, "Ann plays the cello on Sundays", MemoryType.FACT, T0 + DAY)
    assert {h.memory.id for h in mine.load_memories(context(now=T0 + 2 * DAY), "Ann cello bees")} == {kept.id, gone.id}
    assert store.archive(gone.namespace, [gone.id]) == 1
    found = mine.load_memories(context(now=T0 + 3 * DAY), "Ann cello bees")
    assert [h.memory.id for h in found] == [kept.id]
    save(mine, "Ann visits the old lighthouse each spring", MemoryType.EPISODE, T0 + 4 * DAY)
    later = T0 + 20 * 365 * DAY  # the episode faded and was never read: the cleanup archives it
    archived = mine.cleanup(context(now=later))
    assert len(archived) == 1
    listed = []
    mine.store.list = lambda *a, **k: listed.append(a) or []  # type: ignore[method-assign]
    mine.load_memories(context(now=later), "Ann lighthouse")
    assert listed == []  # its own archive did not make its copy stale


def _a_search_never_serves_what_another_service_archived(make_service, store: MemoryStore) -> None:
    """A search reads the namespace's version first: a memory another service archived is not served from
    this service's copy, and one another service saved is found."""
    mine, other = make_service(store=store), make_service(store=store)
    gone = save(mine, "Ann is allergic to peanuts", MemoryType.FACT, T0)
    assert [h.memory.id for h in mine.search(context(), "peanuts allergic", 3)] == [gone.id]
    assert other.enforce_max_items(context(), 0) == [gone.id]
    assert mine.search(context(), "peanuts allergic", 3, touch=False) == []
    new = save(other, "Ann is allergic to peanuts and cashews", MemoryType.FACT, T0 + DAY)
    assert [h.memory.id for h in mine.search(context(), "peanuts allergic", 3, touch=False)] == [new.id]


def test_a_search_never_serves_what_another_service_archived(make_service, store: MemoryStore) -> None:
    _a_search_never_serves_what_another_service_archived(make_service, store)


def test_a_search_never_serves_what_another_service_archived_in_memory(make_service) -> None:
    _a_search_never_serves_what_another_service_archived(make_service, MemoryStore())


@pytest.mark.parametrize("content", ["", "   \n", None, 42])
def test_a_save_of_no_text_is_refused_as_the_tools_refuse_it(make_service, content) -> None:
    service = make_service()
    with pytest.raises(MemlabError, match="save: content must be a non-empty string"):
        service.save(context(), content, MemoryType.FACT)
    assert service.search(context(), "anything", 5, touch=False) == []


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        ("I use \ud83d vim", "is not valid text (surrogates not allowed at position 6)"),
        ("...", "has no words"),
        ("Ann: ;)", "has no words"),
    ],
)
def test_a_save_of_content_the_tools_refuse_is_refused(make_service, content, problem) -> None:
    """A lone surrogate would crash the id's hash; content without words says nothing (as `memory_save` refuses it)."""
    service = make_service()
    with pytest.raises(MemlabError, match=re.escape(f"save: content {problem}")):
        service.save(context(), content, MemoryType.FACT)
    assert service.memories(context()) == []


def test_a_save_reads_its_type_as_the_tools_do_and_refuses_an_unknown_one(make_service) -> None:
    """An unknown type stored would make every later search and cleanup of the namespace fail, on every service."""
    service = make_service()
    kept = service.save(context(), "Ann prefers tabs to spaces", "preference").memory
    assert kept.type is MemoryType.PREFERENCE
    for bogus in ("BOGUS", "", 42):
        with pytest.raises(MemlabError, match="save: unknown memory type"):
            service.save(context(), "Ann writes Java at work", bogus)  # type: ignore[arg-type]
    assert [h.memory.id for h in service.search(context(), "Ann tabs Java", 5)] == [kept.id]
    assert service.cleanup(context()) == [] and [
        m.id for m in make_service(store=service.store).memories(context())
    ] == [kept.id]
