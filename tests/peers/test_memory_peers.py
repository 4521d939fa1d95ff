"""Memory-layer peers (llama-index's ChatSummaryMemoryBuffer, LangMem's summarize_messages) on the stored history.

- the LangMem entry keeps exactly the messages LangMem's documented rule keeps (recomputed here from the token
  counts: the oldest messages up to the first that reaches max_tokens_before_summary with the rest fitting
  max_tokens - max_summary_tokens are folded), and a second rewrite extends the running summary;
- the llama-index entry stores one summary then the newest messages whose text fits token_limit, never
  starting on an assistant message, and its summary event cites exactly the messages it folded;
- as AgentMemory compressors, the items kept are those of the messages the library kept;
- real runs (`memory=` on a LoCoMo slice, `agent_memory=` on tau-bench trajectories) fill the memory metrics.
"""

from __future__ import annotations

import pytest
from requires import require

require("llama_index.core", "langmem", "langchain_core")

from memlab.api import compose, run  # noqa: E402  (after the skip)
from memlab.dialogues import load_locomo  # noqa: E402
from memlab.llm import ExtractiveChatModel  # noqa: E402
from memlab.memory import MemorySnapshot  # noqa: E402
from memlab.messages import FunctionCall, FunctionCallOutput, MessageItem, items_to_messages  # noqa: E402
from memlab.peers import LangMemSummaryMemory, LlamaIndexSummaryMemory  # noqa: E402
from memlab.peers.summaries import LANGMEM_PREFIX  # noqa: E402
from memlab.tokens import resolve_counter  # noqa: E402
from memlab.trace import LLM_CALL, SUMMARY, recording  # noqa: E402

COUNTER = "o200k_base"


@pytest.fixture(scope="module")
def history(locomo_path):
    """conv-26's first two sessions as one stored history (about 40 messages)."""
    d = load_locomo(locomo_path)[0]
    return [m for s in d.sessions[:2] for m in s.messages if m.text.strip()]


def langmem_kept(texts: list[str], max_tokens: int, before: int, summary_tokens: int) -> int:
    """LangMem's rule, recomputed: how many newest messages survive a first summarization (0 if none runs)."""
    count = resolve_counter(COUNTER).count_text
    tokens = [count(t) for t in texts]
    total, running = sum(tokens), 0
    for i, n in enumerate(tokens):
        running += n
        if running >= before and total - running <= max_tokens - summary_tokens:
            return len(texts) - i - 1
    return len(texts)


def test_langmem_keeps_what_its_rule_keeps_and_extends_the_summary(history) -> None:
    peer = LangMemSummaryMemory(ExtractiveChatModel(), COUNTER, max_tokens=400, max_summary_tokens=100)
    with recording() as events:
        stored = peer.apply(history)
    kept = langmem_kept([m.text for m in history], 400, 400, 100)
    assert 0 < kept < len(history)
    assert stored[1:] == history[-kept:]
    assert stored[0].role == "system" and stored[0].text.startswith(LANGMEM_PREFIX)
    (summary,) = [e for e in events if e.kind == SUMMARY]
    assert summary.data["layer"] == "memory" and summary.data["text"] == stored[0].text
    assert summary.data["source_ids"] == [m.id for m in history[:-kept]]
    assert summary.data["source_messages"] == len(history) - kept

    later = [*stored, *history[:30]]  # more turns arrive: the stored summary is LangMem's running summary
    with recording() as events:
        again = peer.apply(later)
    folded = [e for e in events if e.kind == SUMMARY]
    assert len(folded) == 1 and again[0].text.startswith(LANGMEM_PREFIX) and again[0] != stored[0]
    assert any(e.kind == LLM_CALL for e in events)  # memlab's model wrote it, reported on this step
    assert again[1:] == later[len(later) - (len(again) - 1) :]
    assert not any(m.text.startswith(LANGMEM_PREFIX) for m in again[1:])


def test_a_short_history_is_left_alone(history) -> None:
    for peer in (
        LangMemSummaryMemory(ExtractiveChatModel(), COUNTER, max_tokens=100_000),
        LlamaIndexSummaryMemory(ExtractiveChatModel(), COUNTER, max_tokens=100_000),
    ):
        with recording() as events:
            assert peer.apply(history) == history
        assert not events


def test_llamaindex_stores_a_summary_then_the_newest_messages_that_fit(history) -> None:
    peer = LlamaIndexSummaryMemory(ExtractiveChatModel(), COUNTER, max_tokens=300)
    with recording() as events:
        stored = peer.apply(history)
    kept = len(stored) - 1
    # The rule, recomputed: the longest suffix whose messages' token counts sum to 300 at most, then shortened
    # until it starts on neither an assistant nor a tool message.
    count = resolve_counter(COUNTER).count_text
    fits = max(n for n in range(len(history) + 1) if sum(count(m.text) for m in history[len(history) - n :]) <= 300)
    while fits and history[-fits].role in ("assistant", "tool"):
        fits -= 1
    assert 0 < kept == fits < len(history) and stored[1:] == history[-kept:]
    assert stored[0].role == "system" and stored[1].role != "assistant"
    (summary,) = [e for e in events if e.kind == SUMMARY]
    assert summary.data["source_ids"] == [m.id for m in history[:-kept]]
    assert any(e.kind == LLM_CALL for e in events)  # memlab's model wrote it, reported on this step


def test_a_compressor_keeps_the_items_of_the_messages_the_library_kept() -> None:
    items = []
    for i in range(12):
        items += [
            MessageItem("user", f"Please check flight number {i} for the customer record {i}.", source_id=f"u{i}"),
            FunctionCall(call_id=f"c{i}", name="get_flight", arguments="{}", source_id=f"a{i}"),
            FunctionCallOutput(
                call_id=f"c{i}", output=f"Flight {i} departs at {i}:00 from gate {i}.", source_id=f"t{i}"
            ),
            MessageItem("assistant", f"Flight {i} leaves at {i}:00.", source_id=f"r{i}"),
        ]
    for peer in (
        LangMemSummaryMemory(ExtractiveChatModel(), COUNTER, max_tokens=200, max_summary_tokens=50),
        LlamaIndexSummaryMemory(ExtractiveChatModel(), COUNTER, max_tokens=150),
    ):
        with recording() as events:
            out = peer.compress(MemorySnapshot.of(items))
        assert out.summary and 0 < len(out.items) < len(items)
        assert tuple(items[len(items) - len(out.items) :]) == out.items
        (summary,) = [e for e in events if e.kind == SUMMARY]
        assert summary.data["layer"] == "compressor"
        folded = items_to_messages(items[: len(items) - len(out.items)])
        assert summary.data["source_ids"] == [m.id for m in folded]
        # Nothing new to fold (a long summary, one short user item): the snapshot stays, no summary is reported.
        alone = MemorySnapshot.of([MessageItem("user", "Thanks!", source_id="u99")], "Flights were asked about. " * 40)
        with recording() as events:
            assert peer.compress(alone) == alone
        assert not [e for e in events if e.kind == SUMMARY]


SLICE = ("dataset=locomo", "context=none", "dataset.sample_ids=[conv-26]", "sim.max_sessions=4", "sim.workers=1")


@pytest.mark.parametrize("entry", ["llamaindex_summary", "langmem_summary"])
def test_a_memory_peer_fills_the_memory_metrics(entry: str, locomo_path, tmp_path) -> None:
    base = [f"dataset.path={locomo_path}", *SLICE, "tokenizer=o200k_base", "pricing.model=gpt-4o-mini"]
    plain = run(compose([*base, "memory=none"]), tmp_path / "none").metrics
    m = run(compose([*base, f"memory={entry}", "memory.strategy.max_tokens=600"]), tmp_path / entry).metrics
    assert m["memory.cleanup.count"] == 4  # one per session end
    assert m["memory.cleanup.items.after"] < m["memory.cleanup.items.before"]
    assert m["summary.memory.count"] == m["summary.memory.accepted"] > 0
    assert m["llm.calls"] > plain["llm.calls"] and m["tokens.aux.total"] > 0
    assert m["tokens.prompt.mean"] < plain["tokens.prompt.mean"]
    assert 0 < m["context.evidence_fed_to_summary"] <= 1


@pytest.mark.parametrize("entry", ["llamaindex_summary", "langmem_summary"])
def test_a_compressor_peer_fills_the_compression_metrics(entry: str, tau_bench_path, tmp_path) -> None:
    over = ["dataset=tau_bench", f"dataset.path={tau_bench_path}", "sim.max_dialogues=3", "sim.workers=1"]
    m = run(compose([*over, f"agent_memory={entry}", "agent_memory.compressor.max_tokens=800"]), tmp_path).metrics
    assert m["memory.compress.count"] > 0
    assert m["memory.compress.items.after"] < m["memory.compress.items.before"]
    assert m["summary.compressor.count"] > 0 and m["llm.calls"] > 0
