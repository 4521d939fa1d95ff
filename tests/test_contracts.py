"""Every entry of every config group: composed, built and used the way a run uses it, on a small history.

The entries are read from Hydra's config repository, so a new conf/<group>/<name>.yaml is tested the day
it is added, with no edit here; a new group needs its contract in CONTRACTS (a test says so). Entries
that call a provider get the local OpenAI-compatible server (tests/llm/openai_server.py); an entry whose
optional extra is missing is skipped with the `pip install 'memlab[extra]'` its own error names. The
store group's contract runs on the isolated databases of tests/stores (test_store_entries.py).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from entries import grouped, groups, is_peer, options
from omegaconf import DictConfig, OmegaConf

from memlab.dialogues import Dialogue
from memlab.errors import MemlabError
from memlab.experiment import instantiate, replay
from memlab.llm import Completion, LLMError
from memlab.longterm import LongTermMemoryComponent
from memlab.messages import Message, ToolCall, system
from memlab.runtime import CallContext, Component, SecurityContext
from memlab.sim import CallRecord
from memlab.tokens import get_counter
from memlab.trace import CONTEXT_APPLY, LONGTERM_EXTRACT, recording
from memlab.units import orphans

# Groups of run settings rather than parts (experiment: tests/test_experiments.py).
SETTINGS = ("hydra", "schema", "experiment", "debug", "hparams_search", "local")
ELSEWHERE = {"store": "tests/stores/test_store_entries.py", "logger": "tests/tracking/test_loggers.py"}
# A small run for the contracts that replay: one synthetic user, two short sessions, one process.
SMALL_RUN = ("dataset=synthetic", "dataset.dialogues=1", "dataset.sessions=2", "dataset.turns_per_session=6")
SMALL_RUN += ("sim.workers=1", "sim.progress=false", "agent_id=chat")


def entries() -> list[tuple[str, str]]:
    """(group, entry) for every entry of every group that holds a run's parts."""
    return [(g, name) for g in groups() if g not in SETTINGS for name in options(g)]


def selecting(group: str, name: str) -> str:
    """The override that puts the entry in a run (hooks are added under their own name)."""
    return f"+hooks@hooks.{name}={name}" if group == "hooks" else f"{group}={name}"


def path_of(group: str, name: str) -> str:
    """Where the entry's node is in the run's config."""
    return f"hooks.{name}" if group == "hooks" else group


def request() -> list[Message]:
    """A request over every default budget: a system prompt, 24 exchanges, 6 tool calls, the user last."""
    ms = [system("You are the travel desk of an airline; answer from the booking records.")]
    for i in range(24):
        ms.append(Message("user", f"Question {i}: what about my flight to Lisbon on May {i + 1}? " * 4, id=f"u{i}"))
        if i % 4 == 3:
            ms.append(Message("assistant", None, tool_calls=(ToolCall(f"c{i}", "search_booking"),), id=f"c{i}"))
            ms.append(Message("tool", f"booking {i}: seat 12A, gate B{i}, " * 20, tool_call_id=f"c{i}", id=f"r{i}"))
        ms.append(Message("assistant", f"Answer {i}: the flight leaves at {i % 12 + 6} am from terminal 1. " * 4))
    ms.append(Message("user", "And which gate do I go to?", id="last"))
    return ms


@dataclass
class Entry:
    group: str
    name: str
    cfg: DictConfig
    built: Any


def check_context(entry: Entry) -> None:
    """No editing for `none`; else the strategy cuts a copy, keeps the newest message and the order, says its name."""
    strategy = getattr(entry.built, "strategy", None)
    if strategy is None:
        assert list(entry.built.stages()) == [], f"context={entry.name} has no strategy, so it must edit nothing"
        return
    assert strategy.name == entry.name, "the run records the strategy under its entry's name"
    ms = request()
    before = list(ms)
    ctx = CallContext("d", "s", 0, None, SecurityContext("u"), counter=get_counter("estimate"))
    with recording() as events:
        out = entry.built.process(ms, ctx)
    assert ms == before and out is not ms, "the request is left as it was"
    assert 0 < len(out) < len(ms), "the defaults cut a request over every budget"
    assert out[-1] == ms[-1], "the newest message is always sent"
    kept = [ms.index(m) for m in out if m in ms]
    assert kept == sorted(kept), "kept messages keep their order"
    if not is_peer(strategy):
        assert orphans(out) == [], "a tool call is never sent without its result, nor a result without its call"
    (event,) = [e for e in events if e.kind == CONTEXT_APPLY]
    assert (event.data["strategy"], event.data["messages_out"]) == (entry.name, len(out))


def check_memory(entry: Entry) -> None:
    """The strategy rewrites a copy of the stored history: shorter, the newest message kept, no orphan made."""
    strategy = getattr(entry.built, "strategy", None)
    if strategy is None:
        assert type(entry.built) is Component, f"memory={entry.name} has no strategy, so it must be the no-op"
        return
    stored = request()[1:]
    before = list(stored)
    out = strategy.apply(stored)
    assert stored == before and out is not stored
    assert 0 < len(out) < len(stored), "the defaults shorten a history of 60 messages"
    assert out[-1] == stored[-1], "the newest message stays"
    assert orphans(out) == []


def check_agent_memory(entry: Entry) -> None:
    """A history per session: everything written is kept or compressed, the newest message last, no orphan."""
    history = entry.built(f"contract-{entry.name}")
    written = request()[1:]
    for m in written:
        history.append(m)
    held = history.messages()
    assert 0 < len(held) <= len(written)
    assert held[-1].text == written[-1].text
    assert orphans(held) == []


def check_replayed(entry: Entry) -> None:
    """Replayed on a small run: the model is called, and an enabled long-term memory extracts."""
    dialogues: list[Dialogue] = list(instantiate(entry.cfg.dataset))
    records = replay(entry.cfg, dialogues)
    calls = [r for r in records if isinstance(r, CallRecord)]
    assert calls, f"{entry.group}={entry.name}: no model call replayed"
    built = entry.built
    if isinstance(built, LongTermMemoryComponent) and built.service.settings(entry.cfg.agent_id).enabled:
        assert any(e.kind == LONGTERM_EXTRACT and e.data["memories"] > 0 for r in records for e in r.events)


ASKED = [
    Message(
        "user", "I booked a hotel near the river. My flight to Lisbon leaves from gate B4. The museum opens at ten."
    ),
    Message("assistant", "Noted: the hotel, the museum, and the flight."),
    Message("user", "Which gate does my flight to Lisbon leave from?"),
]


def check_llm(entry: Entry) -> None:
    """A chat call answers with text, or fails with the backend's error (llm=faulty fails on purpose)."""
    try:
        out = entry.built.complete(ASKED, task="chat")
    except LLMError:
        assert getattr(entry.built, "rate", 0) > 0, f"llm={entry.name} failed without being told to"
        return
    assert isinstance(out, Completion) and isinstance(out.text, str) and out.text


def check_embedder(entry: Entry) -> None:
    """Texts in, one unit vector of `dim` per text out, the same each time."""
    texts = ["my flight to Lisbon", "the gate of my flight", "我的航班"]
    vectors = entry.built.embed(texts)
    assert vectors.shape == (3, entry.built.dim)
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, rtol=1e-5)
    np.testing.assert_array_equal(vectors, entry.built.embed(texts))


def check_dataset(entry: Entry) -> None:
    """Dialogues with ids, sessions and messages."""
    dialogues = list(entry.built)
    assert dialogues and all(isinstance(d, Dialogue) for d in dialogues)
    assert len({d.id for d in dialogues}) == len(dialogues)
    assert all(list(d.messages()) for d in dialogues)


CONTRACTS: dict[str, Callable[[Entry], None]] = {
    "context": check_context,
    "memory": check_memory,
    "agent_memory": check_agent_memory,
    "longterm": check_replayed,
    "hooks": check_replayed,
    "policy": check_replayed,
    "llm": check_llm,
    "embedder": check_embedder,
    "dataset": check_dataset,
}


@contextlib.contextmanager
def provider(node: DictConfig | None, server_module: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """Overrides that point an entry with an `api_base` at the local OpenAI-compatible server."""
    if node is None or "api_base" not in node:
        yield []
        return
    monkeypatch.setenv("MEMLAB_CONTRACT_KEY", "sk-test")
    with server_module.serve() as server:
        width = [f"dim={server_module.EMBEDDING_DIM}"] if "dim" in node else []
        yield [f"api_base={server.base_url}", "api_key_env=MEMLAB_CONTRACT_KEY", "num_retries=0", *width]


def test_every_group_has_a_contract() -> None:
    found = {g for g, _ in entries()}
    assert found - set(CONTRACTS) - set(ELSEWHERE) == set(), "add the new group's contract to CONTRACTS"


@pytest.mark.parametrize(("group", "name"), grouped([e for e in entries() if e[0] in CONTRACTS]))
def test_entry_keeps_its_groups_contract(
    make_config: Callable[..., DictConfig],
    openai_server_module: Any,
    shared_corpora: Path,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    group: str,
    name: str,
) -> None:
    monkeypatch.setenv("MEMLAB_LOCOMO", str(shared_corpora / "datasets/locomo/locomo_dev7.json"))
    monkeypatch.setenv("MEMLAB_TAU_BENCH", str(shared_corpora / "datasets/tau_bench/airline_gpt4o_dev150.json"))
    monkeypatch.setenv("MEMLAB_CACHE", str(tmp_path / "cache"))
    overrides = (selecting(group, name), *SMALL_RUN)
    where = path_of(group, name)
    composed = make_config(*overrides)
    with provider(OmegaConf.select(composed, where), openai_server_module, monkeypatch) as served:
        cfg = make_config(*overrides, *(f"{where}.{o}" for o in served)) if served else composed  # composed once
        try:
            built = instantiate(OmegaConf.select(cfg, where))
        except MemlabError as e:
            if "pip install 'memlab[" in str(e) or "no such file" in str(e):
                pytest.skip(str(e))
            raise
        CONTRACTS[group](Entry(group, name, cfg, built))
