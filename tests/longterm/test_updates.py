"""Updated facts on the synthetic generator: the newer statement must rank above the one it contradicts.

Each UPDATE probe names its latest statement (evidence) and the contradicted ones (metadata
``superseded``). Over the probes where either is retrieved (top 20), the share where the newer
ranks first is measured with the offline defaults, and against decay scaling relevance and
without the update rule (docs/longterm.md).
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from hydra.utils import instantiate

from memlab.dialogues.synthetic import UPDATE, generate_synthetic
from memlab.longterm import RESULT_EVIDENCE, MemoryType
from memlab.longterm.model import SOURCE_AUTO_EXTRACT
from memlab.memory import InMemoryChatMemory
from memlab.runtime import Runtime, SecurityContext
from memlab.sim import ProbeRecord, simulate
from memlab.tokens import get_counter

from .support import T0, context

NEWER_FIRST_FLOOR = 0.95  # issue 15; measured 0.971 (34 of 35) on this seed; seeds 4-6: 0.836 (docs/longterm.md)


def newer_first_rate(make_config, *overrides: str) -> tuple[float, int]:
    cfg = make_config("longterm=chat", "agent_id=chat", *overrides)
    component = instantiate(cfg.longterm)
    counter = get_counter(cfg.tokenizer)
    dialogues = generate_synthetic(seed=7, dialogues=16, sessions=6, turns_per_session=10, facts=8, update_rate=0.5)
    records = simulate(
        dialogues,
        lambda d: Runtime(InMemoryChatMemory(d.id), counter, SecurityContext(d.user_id, "chat"), [component]),
    )
    outcomes = []
    for r in records:
        if not isinstance(r, ProbeRecord) or r.probe.category != UPDATE:
            continue
        retrieved = r.results[RESULT_EVIDENCE]
        newer = next((i for i, ev in enumerate(retrieved) if r.probe.evidence[0] in ev), None)
        older = next((i for i, ev in enumerate(retrieved) if set(r.probe.metadata["superseded"]) & set(ev)), None)
        if newer is not None or older is not None:
            outcomes.append(newer is not None and (older is None or newer < older))
    return sum(outcomes) / len(outcomes), len(outcomes)


@pytest.mark.slow
def test_the_newer_fact_ranks_above_the_contradicted_one(make_config) -> None:
    rate, n = newer_first_rate(make_config)
    without_rule, _ = newer_first_rate(make_config, "longterm.index.update_similarity=null")
    print(f"\nnewer first: {rate:.3f} of {n} (without the update rule {without_rule:.3f})")
    assert n >= 30
    assert rate >= NEWER_FIRST_FLOOR
    assert rate > without_rule


OLD_FIX = "The CI pipeline is green again after raising the job timeout to 40 minutes."
# The update is one sentence among chatter, and reads as another type than the statement it revises.
NEW_FIX = (
    "Sorry for the delay, meetings all morning. I'm taking a short break to get some lentil curry. "
    "Can you help me write a README section about installation? Could you explain feature flags? "
    "CI broke again, and this time I fixed it by upgrading the checkout action."
)


@pytest.mark.parametrize("update_similarity", [0.2, None])
def test_an_update_buried_in_chatter_goes_above_the_fix_it_revises(make_service, update_similarity) -> None:
    from memlab.longterm import IndexSpec

    service = make_service(index="hybrid")
    service.index_spec = IndexSpec(update_similarity=update_similarity)
    old = service.save(context(now=T0), OLD_FIX, MemoryType.FACT, source=SOURCE_AUTO_EXTRACT).memory
    later = context(now=T0 + timedelta(days=9))
    new = service.save(later, NEW_FIX, MemoryType.PROCEDURE, source=SOURCE_AUTO_EXTRACT).memory
    ranked = [h.memory.id for h in service.search(later, "How did I fix the CI pipeline?", 2, touch=False)]
    by_relevance = [old.id, new.id]  # the chatter dilutes the update's BM25 share
    assert ranked == (by_relevance[::-1] if update_similarity is not None else by_relevance)
