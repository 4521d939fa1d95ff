"""Updated facts on the synthetic generator: the newer statement must rank above the one it contradicts.

Each UPDATE probe names its latest statement (evidence) and the contradicted ones (metadata
``superseded``). Over the probes where either is retrieved (top 20), the share where the newer
ranks first is measured with the offline defaults, pooled over seeds 1-6, against the pipeline without
the revision links and the update stage, and with the update stage on (docs/longterm.md). The generator's
templates are no evidence that a rule works on other wording: datasets/updates is that check.
"""

from __future__ import annotations

import multiprocessing
from concurrent.futures import ProcessPoolExecutor
from datetime import timedelta

import pytest
from hydra.utils import instantiate
from omegaconf import DictConfig

from memlab.dialogues import Dialogue
from memlab.dialogues.synthetic import UPDATE, generate_synthetic
from memlab.longterm import RESULT_EVIDENCE, MemoryType
from memlab.longterm.model import SOURCE_AUTO_EXTRACT
from memlab.memory import InMemoryChatMemory
from memlab.metrics.longterm import newer_first_metrics
from memlab.runtime import Runtime, SecurityContext
from memlab.sim import ProbeRecord, simulate
from memlab.tokens import get_counter

from .support import T0, context

SEEDS = (1, 2, 3, 4, 5, 6)
# No fitted floor: issue 15's 0.95 was reached by cue words the generator's own templates use (issue 24). On these
# seeds (Dec 5, after issue 24): no rules 0.653 of 245, the default pipeline (revision links) 0.743, with the
# meaning-based update stage on 0.804 of 245 (re-measured at 4fc7e75 and after). Each rule must pay on the
# generator's updates, in that order.
NO_RULES = ("longterm.rerank=[decay,dedup]",)  # the pipeline without stages updates and revisions
WITH_UPDATES = ("longterm.rerank=[decay,updates,revisions,dedup]",)  # the update stage on (off by default)


def newer_first_rates(make_config, *variants: tuple[str, ...]) -> list[tuple[float, int]]:
    """Per variant (overrides of the offline defaults): the pooled newer-first rate over `SEEDS`, and its probes.

    The seeds are independent (a fresh store each): replayed in two forked processes, one seed's variants in
    the same process, so they share its memoized text analysis (the same dialogues: sentences, terms); the
    tokenizer and the embedder's imports are loaded before the fork, once. Only memoization (the hashing embedder's
    rows among it) and the seed's generated dialogues are shared.
    """
    cfgs = [make_config("longterm=chat", "agent_id=chat", *overrides) for overrides in variants]
    get_counter(cfgs[0].tokenizer)  # loaded once, inherited by the forks ...
    instantiate(cfgs[0].longterm)  # ... as are the embedder's imports
    with ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("fork")) as pool:
        per_seed = list(pool.map(_seed_variants, [cfgs] * len(SEEDS), SEEDS))
    rates = []
    for variant in range(len(variants)):
        outcomes = []
        for runs in per_seed:  # the metric a run writes agrees with this count, seed by seed
            seed_outcomes, metrics = runs[variant]
            assert metrics == {
                "longterm.newer_first": sum(seed_outcomes) / len(seed_outcomes),
                "longterm.newer_first.probes": float(len(seed_outcomes)),
            }
            outcomes += seed_outcomes
        rates.append((sum(outcomes) / len(outcomes), len(outcomes)))
    return rates


def _seed_variants(cfgs: list[DictConfig], seed: int) -> list[tuple[list[bool], dict[str, float]]]:
    """`_seed_outcomes` of one seed's dialogues (generated once: frozen, the same for every variant) under each
    config, in this process."""
    dialogues = generate_synthetic(seed=seed, dialogues=16, sessions=6, turns_per_session=10, facts=8, update_rate=0.5)
    return [_seed_outcomes(cfg, dialogues) for cfg in cfgs]


def _seed_outcomes(cfg: DictConfig, dialogues: list[Dialogue]) -> tuple[list[bool], dict[str, float]]:
    """`_outcomes` of one seed's dialogues (its users' memories in one store), and `newer_first_metrics` of them."""
    counter = get_counter(cfg.tokenizer)
    component = instantiate(cfg.longterm)
    records = list(
        simulate(
            dialogues,
            lambda d: Runtime(InMemoryChatMemory(d.id), counter, SecurityContext(d.user_id, "chat"), [component]),
        )
    )
    return _outcomes(records), newer_first_metrics([r for r in records if isinstance(r, ProbeRecord)])


def _outcomes(records) -> list[bool]:
    """Per UPDATE probe where either statement is retrieved: the newer one ranks first."""
    outcomes = []
    for r in records:
        if not isinstance(r, ProbeRecord) or r.probe.category != UPDATE:
            continue
        retrieved = r.results[RESULT_EVIDENCE]
        newer = next((i for i, ev in enumerate(retrieved) if r.probe.evidence[0] in ev), None)
        older = next((i for i, ev in enumerate(retrieved) if set(r.probe.metadata["superseded"]) & set(ev)), None)
        if newer is not None or older is not None:
            outcomes.append(newer is not None and (older is None or newer < older))
    return outcomes


@pytest.mark.slow
def test_the_newer_fact_ranks_above_the_contradicted_one(make_config) -> None:
    (rate, n), (without_rules, _), (with_updates, _) = newer_first_rates(make_config, (), NO_RULES, WITH_UPDATES)
    print(f"\nnewer first: {rate:.3f} of {n} (no rules {without_rules:.3f}, update stage on {with_updates:.3f})")
    assert n >= 200
    assert without_rules < rate < with_updates


OLD_FIX = "The CI pipeline is green again after raising the job timeout to 40 minutes."
# The update is one sentence among chatter, and reads as another type than the statement it revises.
NEW_FIX = (
    "Sorry for the delay, meetings all morning. I'm taking a short break to get some lentil curry. "
    "Can you help me write a README section about installation? Could you explain feature flags? "
    "CI broke again, and this time I fixed it by upgrading the checkout action."
)


@pytest.mark.parametrize(
    ("update_similarity", "old_speaker", "question", "moved"),
    [
        (0.2, "", "How did I fix the CI pipeline?", True),
        (None, "", "How did I fix the CI pipeline?", False),
        (0.2, "Bob: ", "How did I fix the CI pipeline?", False),  # a person revises their own statements
    ],
)
def test_an_update_buried_in_chatter_goes_above_the_fix_it_revises(
    make_service, update_similarity, old_speaker, question, moved
) -> None:
    from memlab.longterm.rerank import Decay, Dedup, Updates

    service = make_service(index="hybrid")
    # the gate off: "How did I fix ..." is past tense, but asks for the fix that holds now (the gate's blind spot)
    updates = [] if update_similarity is None else [Updates(similarity=update_similarity, present_tense_only=False)]
    service.rerank = [Decay(), *updates, Dedup()]  # the search-time rule alone
    old = service.save(context(now=T0), old_speaker + OLD_FIX, MemoryType.FACT, source=SOURCE_AUTO_EXTRACT).memory
    later = context(now=T0 + timedelta(days=9))
    new = service.save(later, NEW_FIX, MemoryType.PROCEDURE, source=SOURCE_AUTO_EXTRACT).memory
    ranked = [h.memory.id for h in service.search(later, question, 2, touch=False)]
    service.rerank = [Decay(), Dedup()]
    by_relevance = [h.memory.id for h in service.search(later, question, 2, touch=False)]
    if moved:
        assert by_relevance == [old.id, new.id]  # the chatter dilutes the update's BM25 share ...
        assert ranked == [new.id, old.id]  # ... and the update stage puts it first
    else:
        assert ranked == by_relevance
