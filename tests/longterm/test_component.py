"""The component in the simulator: configs, injection at session start, probes, determinism, the worker."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hydra.utils import instantiate

from memlab.dialogues import load_locomo
from memlab.longterm import RESULT_EVIDENCE, RESULT_INJECTED_TOKENS, LongTermMemoryComponent, parse_block
from memlab.memory import InMemoryChatMemory
from memlab.metrics.longterm import longterm_metrics
from memlab.runtime import Runtime, SecurityContext
from memlab.sim import CallRecord, ProbeRecord, simulate
from memlab.tokens import get_counter
from memlab.trace import LONGTERM_EXTRACT, LONGTERM_RETRIEVE


def test_the_documents_defaults_and_the_chat_override(make_config) -> None:
    component = instantiate(make_config("longterm=default").longterm)
    default, chat = component.service.settings("default"), component.service.settings("chat")
    assert (default.enabled, default.namespace, default.max_items, default.auto_extract, default.auto_load) == (
        False,
        "default",
        100,
        True,
        True,
    )
    assert (default.load_max_items, default.memory_tools) == (10, False)
    assert (chat.enabled, chat.namespace, chat.max_items, chat.memory_tools) == (True, "chat", 200, True)
    assert component.tool_provider.schemas("default") == [] and len(component.tool_provider.schemas("chat")) == 2


def test_a_wrong_key_fails_at_compose_time(make_config) -> None:
    from hydra.errors import ConfigCompositionException

    with pytest.raises(ConfigCompositionException):
        make_config("longterm=chat", "longterm.max_itemz=3")
    with pytest.raises(ConfigCompositionException):
        make_config("longterm=chat", "longterm.max_items=many")
    with pytest.raises(ConfigCompositionException):
        make_config("longterm=default", "longterm.agents.chat.max_itemz=3")


@pytest.fixture(scope="module")
def two_dialogues(locomo_path):
    """The first two LoCoMo conversations, cut to six sessions and their answerable questions."""
    out = []
    for d in load_locomo(locomo_path)[:2]:
        sessions = d.sessions[:6]
        ids = {m.id for s in sessions for m in s.messages}
        probes = tuple(p for p in d.probes if p.evidence and set(p.evidence) <= ids)[:25]
        out.append(replace(d, sessions=sessions, probes=probes))
    return out


def _replay(dialogues, component: LongTermMemoryComponent, agent: str = "chat"):
    counter = get_counter("cl100k_base")
    return list(
        simulate(
            dialogues,
            lambda d: Runtime(InMemoryChatMemory(d.id), counter, SecurityContext(d.user_id, agent), [component]),
        )
    )


def _component(make_config, *overrides: str) -> LongTermMemoryComponent:
    return instantiate(make_config("longterm=locomo", *overrides).longterm)


def test_replay_injects_memories_and_measures_probes(make_config, two_dialogues) -> None:
    records = _replay(two_dialogues, _component(make_config))
    probes = [r for r in records if isinstance(r, ProbeRecord)]
    assert probes and all(len(p.results[RESULT_EVIDENCE]) == 20 for p in probes)
    for p in probes:
        text = p.context_text
        block = text[text.index("<long_term_memory>") : text.index("</long_term_memory>") + len("</long_term_memory>")]
        assert len(parse_block(block)) == 10  # load_max_items, injected with the probe's question
        assert p.results[RESULT_INJECTED_TOKENS] > 0
    # From the second session on, every request carries what earlier sessions left behind.
    plain = _replay(two_dialogues, instantiate(make_config("longterm=none").longterm))
    # The chat settings offer the memory tools: every request carries their schemas (no policy calls them here).
    calls = [c for c in records if isinstance(c, CallRecord)]
    assert all(c.tool_tokens > 0 and not c.tool_calls for c in calls)
    with_memory = {(c.dialogue_id, c.turn): c.prompt_tokens - c.tool_tokens for c in calls}
    without = {(c.dialogue_id, c.turn): c.prompt_tokens for c in plain if isinstance(c, CallRecord)}
    opening = {d.sessions[0].id for d in two_dialogues}
    first_session = {(c.dialogue_id, c.turn) for c in plain if isinstance(c, CallRecord) and c.session_id in opening}
    assert all(with_memory[k] > without[k] for k in with_memory if k not in first_session)
    assert all(with_memory[k] == without[k] for k in first_session)
    events = [e for r in records for e in getattr(r, "events", ())]
    assert any(e.kind == LONGTERM_EXTRACT and e.data["memories"] > 0 for e in events)
    assert all(e.data["latency_us"] >= 0 for e in events if e.kind in (LONGTERM_EXTRACT, LONGTERM_RETRIEVE))
    metrics = longterm_metrics(probes)
    assert 0 < metrics["longterm.recall@1"] <= metrics["longterm.recall@10"] <= metrics["longterm.recall@20"] <= 1


def test_replays_are_deterministic_and_the_worker_reaches_the_same_memories(make_config, two_dialogues) -> None:
    def summary(component):
        records = _replay(two_dialogues, component)
        probes = [r.results for r in records if isinstance(r, ProbeRecord)]
        stored = [
            (m.content, m.evidence, str(m.type))
            for d in two_dialogues
            for m in component.service.store.list(("agent:chat", f"user:{d.user_id}", "memories"), archived=None)
        ]
        return probes, sorted(stored)

    first, second = summary(_component(make_config)), summary(_component(make_config))
    assert first == second
    background = _component(make_config, "longterm.background=true")
    assert summary(background)[1] == first[1]
    assert background.worker is not None and background.worker.errors == []
    background.worker.close()


def test_a_disabled_agent_leaves_everything_alone(make_config, two_dialogues) -> None:
    component = instantiate(make_config("longterm=default").longterm)
    records = _replay(two_dialogues, component, agent="default")
    assert all(not r.results for r in records if isinstance(r, ProbeRecord))
    assert all("<long_term_memory>" not in r.context_text for r in records if isinstance(r, ProbeRecord))
