"""The re-ranking pipeline: stages named in config, one override to turn one off, each stage's moves traced."""

from __future__ import annotations

from datetime import timedelta

import pytest
from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.errors import InstantiationException
from hydra.utils import instantiate

from memlab.errors import MemlabError
from memlab.longterm import DEFAULT_PIPELINE, MemoryType, build_pipeline
from memlab.longterm.model import SOURCE_AUTO_EXTRACT
from memlab.longterm.rerank import Decay, Dedup, Feedback, Updates
from memlab.longterm.retrievals import retrieval_entry
from memlab.ranges import ConfigRangeError, check_config

from .support import T0, context

OLD_FIX = "The CI pipeline is green again after raising the job timeout to 40 minutes."
NEW_FIX = (  # test_updates.py's update buried in chatter: BM25 ranks it below the fix it revises
    "Sorry for the delay, meetings all morning. I'm taking a short break to get some lentil curry. "
    "Can you help me write a README section about installation? Could you explain feature flags? "
    "CI broke again, and this time I fixed it by upgrading the checkout action."
)


def _names(cfg) -> list[str]:
    return [stage.name for stage in instantiate(cfg.longterm).service.rerank]


def test_the_default_pipeline_is_the_listed_stages_in_order(make_config) -> None:
    assert _names(make_config("longterm=chat")) == list(DEFAULT_PIPELINE) == ["decay", "revisions", "dedup"]
    # Feedback was chosen on LoCoMo dev7: it is longterm=locomo's, not the schema's default.
    assert _names(make_config("longterm=locomo")) == ["feedback", "decay", "revisions", "dedup"]


def test_one_override_turns_stages_off_or_reorders_them(make_config) -> None:
    assert _names(make_config("longterm=locomo", "longterm.rerank=[decay,dedup]")) == ["decay", "dedup"]
    assert _names(make_config("longterm=locomo", "longterm.rerank=[dedup,decay]")) == ["dedup", "decay"]
    assert _names(make_config("longterm=locomo", "longterm.rerank=[]")) == []


def test_a_stage_takes_its_knobs_from_its_entry_and_they_are_validated(make_config) -> None:
    on = "longterm.rerank=[decay,updates,revisions,dedup]"  # updates is off by default
    knobs = ("longterm.stages.updates.similarity=0.5", "longterm.stages.revisions.pull=1")
    cfg = make_config("longterm=locomo", on, *knobs)
    stages = {s.name: s for s in instantiate(cfg.longterm).service.rerank}
    assert (stages["updates"].similarity, stages["revisions"].pull) == (0.5, 1)
    with pytest.raises(ConfigRangeError, match=r"longterm\.stages\.revisions\.pull=-1"):
        check_config(make_config("longterm=locomo", "longterm.stages.revisions.pull=-1"))
    with pytest.raises(Exception, match="no_such_knob"):
        make_config("longterm=locomo", "longterm.stages.decay.no_such_knob=1")


def test_an_unknown_stage_name_fails_naming_the_known_ones(make_config) -> None:
    with pytest.raises(InstantiationException) as raised:  # `memlab run` shows the MemlabError it wraps, alone
        instantiate(make_config("longterm=locomo", "longterm.rerank=[decay,recency]").longterm)
    assert isinstance(raised.value.__cause__, MemlabError)
    known = "expected some of feedback, decay, updates, revisions, dedup"
    assert f"unknown stage 'recency'; {known}" in str(raised.value.__cause__)


def test_a_sweep_over_pipelines_parses_to_one_list_per_job() -> None:
    [override] = OverridesParser.create().parse_overrides(["longterm.rerank=[decay,dedup],[decay,updates,dedup]"])
    assert [list(v) for v in override.sweep_iterator()] == [["decay", "dedup"], ["decay", "updates", "dedup"]]


def test_the_trace_says_which_stage_moved_which_memory_where(make_service) -> None:
    service = make_service(index="hybrid")
    service.rerank = [Decay(), Updates(similarity=0.2, present_tense_only=False), Dedup()]  # "How did ..."
    old = service.save(context(now=T0), OLD_FIX, MemoryType.FACT, source=SOURCE_AUTO_EXTRACT).memory
    later = context(now=T0 + timedelta(days=9))
    new = service.save(later, NEW_FIX, MemoryType.PROCEDURE, source=SOURCE_AUTO_EXTRACT, evidence=["D2:1"]).memory
    ranking = service.retrieve(later, "How did I fix the CI pipeline?", 2, touch=False, trace=True)
    assert [h.memory.id for h in ranking.hits] == [new.id, old.id]
    assert [t.stage for t in ranking.stages] == ["decay", "updates", "dedup"]
    entry = retrieval_entry(ranking, ["D2:1"])
    moves = {s["stage"]: s for s in entry["stages"]}
    assert moves["decay"]["moved"] == [] and moves["dedup"]["moved"] == []
    assert moves["updates"]["moved"] == [[new.id, 1, 0], [old.id, 0, 1]]
    assert moves["updates"]["evidence_rank"] == [1, 0]  # the update helped: its evidence went from rank 2 to 1
    assert [r[0] for r in entry["ranked"]] == [new.id, old.id] and entry["ranked"][0][2] == ["D2:1"]
    assert service.search(later, "How did I fix the CI pipeline?", 2, touch=False) == ranking.hits


def test_build_pipeline_without_entries_uses_each_stages_defaults() -> None:
    assert [type(s) for s in build_pipeline(["dedup", "decay"])] == [Dedup, Decay]


TRIPS = [
    "Ann's trip to Lisbon was sunny",
    "Ann's trip to Porto went by train",
    "Lisbon to Porto by train on sunny days, Lisbon and Porto",  # no word of the question
    "Bob repaired his bicycle chain on Sunday",
    "Carla is learning the violin at the community school",
]


def _trip_search(make_service, stages: list) -> list[tuple[str, float]]:
    service = make_service(index="hybrid", rerank=stages)
    ctx = context()
    for text in TRIPS:
        service.save(ctx, text, MemoryType.FACT)
    return [(h.memory.content, h.score) for h in service.search(ctx, "Tell me about Ann's trip", 5, touch=False)]


def test_feedback_asks_again_with_what_its_top_hits_stress_and_can_keep_the_head(make_service) -> None:
    plain = _trip_search(make_service, [])
    expanded = _trip_search(make_service, [Feedback(docs=2, terms=4, weight=1.0)])
    headed = _trip_search(make_service, [Feedback(docs=2, terms=4, weight=1.0, head=1), Decay()])
    # The two trips' distinctive terms (lisbon, porto, train, sunny) find the memory that shares no word with the
    # question: last of the three without feedback, with a BM25 score of 0; third with it, scored by the expansion.
    assert [t for t, _ in plain][:2] == TRIPS[:2] and plain[2][1] < 0.01
    assert [t for t, _ in expanded][2] == TRIPS[2] and expanded[2][1] > 0.2
    # Expansion reorders the head (Porto's trip states two of the added terms); `head=1` keeps the question's own
    # best first, and a stage after it that sorts by score (decay) keeps it there.
    assert expanded[0][0] == TRIPS[1]
    assert [t for t, _ in headed][:3] == TRIPS[:3] and headed[0] == plain[0]
    assert [s for _, s in headed] == sorted((s for _, s in headed), reverse=True)


def test_feedback_passes_a_dense_only_ranking_through(make_service) -> None:
    service = make_service(index="exact", rerank=[Feedback()])
    ctx = context()
    for text in TRIPS:
        service.save(ctx, text, MemoryType.FACT)
    with_stage = service.search(ctx, "Tell me about Ann's trip", 5, touch=False)
    service.rerank = []
    assert with_stage == service.search(ctx, "Tell me about Ann's trip", 5, touch=False)
