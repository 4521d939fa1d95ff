"""Updated facts on the synthetic generator: the newer statement must rank above the one it contradicts.

Each UPDATE probe names its latest statement (evidence) and the contradicted ones (metadata
``superseded``). Over the probes where either is retrieved (top 20), the share where the newer
ranks first is measured with the offline defaults, and against decay scaling relevance and
without the update rule (docs/longterm.md).
"""

from __future__ import annotations

import pytest
from hydra.utils import instantiate

from memlab.dialogues.synthetic import UPDATE, generate_synthetic
from memlab.longterm import RESULT_EVIDENCE
from memlab.memory import InMemoryChatMemory
from memlab.runtime import Runtime, SecurityContext
from memlab.sim import ProbeRecord, simulate
from memlab.tokens import get_counter

NEWER_FIRST_FLOOR = 0.85  # measured 0.861 (issue 15 aims at 0.95: not reached, docs/longterm.md says why)


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
