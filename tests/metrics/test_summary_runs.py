"""Summary and memory-edit metrics on what real runs emit, each checked against an independent computation."""

from __future__ import annotations

import dataclasses
import pickle
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from memlab.dialogues.model import Dialogue, Session
from memlab.experiment import run_experiment
from memlab.llm import ExtractiveChatModel
from memlab.llm.prompts import MEMORY_SUMMARY_PREFIX
from memlab.memory import HybridMemoryCompressor, InMemoryAgentMemory, MemoryCleanupService, TrimStrategy, agent_history
from memlab.messages import Message
from memlab.metrics import compute_metrics
from memlab.metrics.retention import probe_rows
from memlab.runtime import Runtime, SecurityContext
from memlab.sim import ProbeRecord, simulate
from memlab.stores.memory import InMemoryStore
from memlab.summary import LAYERS
from memlab.tokens import CHAT_TOKENS_PER_MESSAGE, get_counter, load_encoding
from memlab.trace import SUMMARY, Event, SourceIds, SummaryEvent

# memory=summarize with a model whose every summary is its input twice (issue 11, item 4).
OVERSIZED = ("dataset.dialogues=1", "memory=summarize", "llm=faulty", "llm.rate=1.0", "llm.modes=[long]")
# A summarizing strategy on every layer in one run.
THREE_LAYERS = (
    *("dataset.dialogues=1", "dataset.sessions=3", "context=summarize"),
    *("memory=summarize", "memory.strategy.threshold=10", "agent_memory=hybrid"),
)
CL100K = load_encoding("cl100k_base")  # tiktoken itself, from the bundled files
O200K = load_encoding("o200k_base")  # gpt-4o-mini's, the runs' default tokenizer


def summaries(records: list[Any]) -> list[SummaryEvent]:
    return [SummaryEvent.of(e) for r in records for e in r.events if e.kind == SUMMARY]


def run(make_config: Any, tmp_path: Path, *overrides: str) -> tuple[dict[str, Any], list[Any], list[SummaryEvent]]:
    """A real run of the composed config: its metrics, its records and the SUMMARY events in them."""
    result = run_experiment(make_config(*overrides), tmp_path / "run")
    return result.metrics, result.records, summaries(result.records)


def test_memory_summarize_on_locomo(make_config: Any, locomo_path: Path, tmp_path: Path) -> None:
    """Done-when: no violations and a mean ratio below 1 on LoCoMo; each figure recomputed from the events."""
    cfg = make_config(
        "dataset=locomo", f"dataset.path={locomo_path}", "dataset.sample_ids=[conv-26]", "memory=summarize"
    )
    result = run_experiment(cfg, tmp_path / "run")
    m, made = result.metrics, summaries(result.records)
    assert made and {s.layer for s in made} == {"memory"} and all(s.counter == "o200k_base" for s in made)
    for s in made:  # the token counts are tiktoken's, with the chat framing, and the source ids are LoCoMo turns
        framing = CHAT_TOKENS_PER_MESSAGE + len(O200K.encode("system"))
        assert s.summary_tokens == len(O200K.encode(s.text or "")) + framing
        assert s.source_ids and all(i.startswith("D") for i in s.source_ids)
    ratios = [s.summary_tokens / s.source_tokens for s in made if s.summary_tokens is not None]
    assert m["summary.memory.count"] == m["summary.count"] == len(made)
    assert (
        m["summary.memory.violations"] == sum(s.summary_tokens > s.source_tokens for s in made if s.summary_tokens) == 0
    )
    assert (
        m["summary.memory.ratio.mean"] == pytest.approx(float(np.mean(ratios))) and m["summary.memory.ratio.mean"] < 1
    )
    assert m["summary.context.count"] == m["summary.compressor.count"] == 0
    assert m["memory.cleanup.count"] > 0 and m["memory.cleanup.items.after"] < m["memory.cleanup.items.before"]
    assert m["memory.compress.count"] == 0
    # The history the probes see starts with the last accepted summary: the summary actually stored.
    probe = next(r for r in result.records if isinstance(r, ProbeRecord))
    assert made[-1].text and made[-1].text in probe.context_text
    assert 0 < m["context.evidence_in_summary"] <= m["context.answer_coverage"]


def test_oversized_memory_summaries_are_rejected_and_the_history_kept(make_config: Any, tmp_path: Path) -> None:
    """`llm=faulty modes=[long]` writes summaries longer than their source: none may be stored (issue 11, item 4)."""
    m, records, made = run(make_config, tmp_path, *OVERSIZED)
    assert made and all(not s.accepted and s.fallback == "unchanged" for s in made)
    assert m["summary.memory.count"] == m["summary.memory.violations"] == m["summary.memory.fallbacks"] == len(made)
    assert m["summary.memory.accepted"] == 0 and m["summary.memory.ratio.mean"] > 1
    assert m["llm.fallbacks"] == len(made)
    assert m["memory.cleanup.items.after"] == m["memory.cleanup.items.before"]  # the history stays as it was
    contexts = [r.context_text for r in records if isinstance(r, ProbeRecord)]
    assert contexts and not any(MEMORY_SUMMARY_PREFIX["en"] in c for c in contexts)


def _dialogue(n: int) -> Dialogue:
    words = ["Oslo", "Lisbon", "guitar", "sourdough", "marathon", "Kyoto", "chess", "violin"]
    msgs = tuple(
        Message(
            "user" if i % 2 == 0 else "assistant",
            f"Turn {i}: I talked about {words[i % 8]} and the number {100 + i}. It went well, and I will say more.",
            id=f"D1:{i}",
        )
        for i in range(n)
    )
    return Dialogue("d1", (Session("S1", msgs),), ())


def test_cleanup_and_compression_are_reported_apart() -> None:
    """A hand case with known counts: 40 messages through a hybrid(20) AgentMemory, then TRIM at session end."""
    dialogue = _dialogue(40)
    llm = ExtractiveChatModel()
    counter = get_counter("cl100k_base")

    def runtime(d: Dialogue) -> Runtime:
        history = agent_history(d.id, store=InMemoryStore(), compressor=HybridMemoryCompressor(20, llm=llm))
        return Runtime(history, counter, SecurityContext("u"), [MemoryCleanupService(TrimStrategy())], None)

    records = list(simulate([dialogue], runtime))
    m = compute_metrics(records)
    # Messages 21..40 each push one item out: 20 compressions from 21 items to 20.
    assert (m["memory.compress.count"], m["memory.compress.items.before"], m["memory.compress.items.after"]) == (
        20,
        20 * 21,
        20 * 20,
    )
    # One session end: the summary message and 20 items, trimmed to the first 2 and last 3.
    assert (m["memory.cleanup.count"], m["memory.cleanup.items.before"], m["memory.cleanup.items.after"]) == (1, 21, 5)
    assert m["summary.compressor.count"] == 20 and m["summary.memory.count"] == m["summary.context.count"] == 0
    assert m["summary.compressor.accepted"] + m["summary.compressor.fallbacks"] == 20
    # Independently: the same writes straight into an AgentMemory, the summary counted with tiktoken after each.
    memory = InMemoryAgentMemory(HybridMemoryCompressor(20, llm=ExtractiveChatModel()))
    held = []
    for i, msg in enumerate(dialogue.messages()):
        memory.add_user_input(msg.text) if msg.role == "user" else memory.add_output_items(
            [{"type": "message", "role": "assistant", "content": msg.text}]
        )
        if i >= 20:
            held.append(len(CL100K.encode(memory.get_summary() or "")))
    assert m["memory.compress.summary_tokens.mean"] == pytest.approx(float(np.mean(held)))


def test_every_layer_reports_through_the_same_event(make_config: Any, tmp_path: Path) -> None:
    """context=summarize, memory=summarize and agent_memory=hybrid in one run: three layers, one event shape."""
    m, _, made = run(make_config, tmp_path, *THREE_LAYERS)
    for layer in LAYERS:
        of_layer = [s for s in made if s.layer == layer]
        assert of_layer, layer
        assert m[f"summary.{layer}.count"] == len(of_layer)
        assert m[f"summary.{layer}.accepted"] == sum(s.accepted for s in of_layer)
    assert m["summary.count"] == sum(m[f"summary.{layer}.count"] for layer in LAYERS) == len(made)
    assert m["memory.cleanup.count"] > 0 and m["memory.compress.count"] > 0


def test_context_summarize_on_locomo_keeps_less_than_it_was_fed(
    make_config: Any, locomo_path: Path, tmp_path: Path
) -> None:
    """Done-when: `evidence_in_summary` is below `evidence_fed_to_summary` and tracks `answer_coverage`."""
    cfg = make_config(
        "dataset=locomo",
        f"dataset.path={locomo_path}",
        "dataset.sample_ids=[conv-26]",
        "dataset.categories=[1]",  # multi-hop questions only, and no calls: the probes' requests alone
        "sim.call_roles=[]",
        "context=summarize",
    )
    result = run_experiment(cfg, tmp_path / "run")
    m = result.metrics
    assert m["summary.context.count"] > 0 and m["summary.context.violations"] == 0
    assert m["context.evidence_fed_to_summary"] == 1.0  # every probe's evidence went into a summary ...
    assert 0 < m["context.evidence_in_summary"] < m["context.evidence_fed_to_summary"]  # ... little of it survived
    assert m["context.evidence_in_summary"] <= m["context.answer_coverage"] < m["context.evidence_in_summary"] + 0.05
    # Per probe, from the questions table: the summary's share is part of the coverage, never more.
    table = pd.read_csv(result.run_dir / "questions.csv")
    assert (table["context.evidence_in_summary"] <= table["context.answer_coverage"] + 1e-9).all()


def test_tool_rounds_summaries_name_their_compressor_and_the_runs_counter(
    make_config: Any, tau_bench_path: Path, tmp_path: Path
) -> None:
    """CodeAct's compressor checks its summaries with the run's tokenizer, and its SUMMARY events say who wrote them."""
    _, _, made = run(
        make_config,
        tmp_path,
        *("dataset=tau_bench", f"dataset.path={tau_bench_path}", "dataset.max_dialogues=3"),
        *("agent_memory=tool_rounds", "agent_memory.compressor.keep_rounds=1"),
    )
    assert made and {(s.layer, s.strategy, s.counter) for s in made} == {("compressor", "tool_rounds", "o200k_base")}


def _ids_listed(record: Any) -> Any:
    """`record` with every SUMMARY event's `SourceIds` replaced by a list of its ids (the encoding before SourceIds)."""
    events = tuple(
        Event(e.kind, {**e.data, "source_ids": list(e.data["source_ids"])}) if e.kind == SUMMARY else e
        for e in record.events
    )
    return dataclasses.replace(record, events=events)


def test_source_ids_listed_when_read_give_the_same_metrics(make_config: Any, locomo_path: Path, tmp_path: Path) -> None:
    """SUMMARY events keep the folded ids as `SourceIds`: a real run's metrics and questions are those of the same
    records with every id list written out, and survive pickling (how replay workers and checkpoints send records)."""
    cfg = make_config("dataset=locomo", f"dataset.path={locomo_path}", "dataset.max_dialogues=1", "context=composite")
    records = run_experiment(cfg, tmp_path / "run").records
    made = [e for r in records for e in r.events if e.kind == SUMMARY]
    assert len(made) > 100 and all(isinstance(e.data["source_ids"], SourceIds) for e in made)
    assert all(len(e.data["source_ids"]) == e.data["source_messages"] > 0 for e in made)  # LoCoMo turns all have ids
    listed = [_ids_listed(r) for r in records]
    unpickled = pickle.loads(pickle.dumps(records))
    rows = probe_rows(records)
    assert rows and probe_rows(listed) == probe_rows(unpickled) == rows
    assert compute_metrics(listed) == compute_metrics(unpickled) == compute_metrics(records)
    assert compute_metrics(records)["context.evidence_fed_to_summary"] > 0
