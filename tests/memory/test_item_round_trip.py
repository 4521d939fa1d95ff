"""Messages through AgentMemory items and back are the same messages, so a compressor that drops nothing sends
the full history: a tool result keeps its name, an assistant message's text and its calls stay one message."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from memlab.dialogues import load_tau_bench
from memlab.experiment import run_experiment
from memlab.messages import (
    FunctionCall,
    FunctionCallOutput,
    Message,
    MessageItem,
    ToolCall,
    item_from_dict,
    item_to_dict,
    items_to_messages,
    messages_to_items,
)

DIALOGUES = 15


def test_every_tau_bench_trajectory_comes_back_from_items_unchanged(tau_bench_path: Path) -> None:
    dialogues = load_tau_bench(tau_bench_path)
    named = mixed = 0
    for d in dialogues:
        messages = list(d.messages())
        items = [item_from_dict(item_to_dict(i)) for i in messages_to_items(messages)]  # as a store keeps them
        assert items_to_messages(items) == messages, d.id
        named += sum(m.role == "tool" and m.name is not None for m in messages)
        mixed += sum(bool(m.content and m.tool_calls) for m in messages)
    assert named > 0 and mixed > 0  # the data has both cases the items used to lose


def test_the_items_keep_the_document_shapes_and_add_only_what_rebuilding_needs() -> None:
    m = Message("assistant", "Let me look.", tool_calls=(ToolCall("c1", "a"), ToolCall("c2", "b")), id="t1")
    result = Message("tool", "ok", name="a", tool_call_id="c1", id="t2")
    items = messages_to_items([m, result])
    assert items == [
        MessageItem("assistant", "Let me look.", source_id="t1"),
        FunctionCall("c1", "a", source_id="t1", joined=True),
        FunctionCall("c2", "b", source_id="t1", joined=True),
        FunctionCallOutput("c1", "ok", source_id="t2", name="a"),
    ]
    assert item_to_dict(items[3]) == {
        "type": "function_call_output",
        "call_id": "c1",
        "output": "ok",
        "name": "a",
        "source_id": "t2",
    }
    # Two messages, one with text only and one with calls only, stay two.
    apart = [Message("assistant", "Looking.", id="x"), Message("assistant", tool_calls=(ToolCall("c", "f"),), id="x")]
    assert items_to_messages(messages_to_items(apart)) == apart
    # Items that do not say `joined` (the document's shape, or stored before it) still make one message.
    old = [item_from_dict({"type": "function_call", "call_id": c, "name": "f", "source_id": "y"}) for c in "pq"]
    assert [len(m.tool_calls) for m in items_to_messages(old)] == [2]


@pytest.mark.parametrize("source", ["a1", None])
def test_two_call_only_messages_of_one_source_stay_two(source: str | None) -> None:
    """The first call of a message with calls only says `joined: false`, in memory and as a store keeps it."""
    a = Message("assistant", tool_calls=(ToolCall("c1", "search"),), id=source)
    b = Message("assistant", tool_calls=(ToolCall("c2", "book"), ToolCall("c3", "pay")), id=source)
    items = messages_to_items([a, b])
    assert [i.joined for i in items if isinstance(i, FunctionCall)] == [False, False, True]
    assert item_to_dict(items[0])["joined"] is False
    assert items_to_messages(items) == [a, b]
    assert items_to_messages([item_from_dict(item_to_dict(i)) for i in items]) == [a, b]


@pytest.mark.parametrize("agent_memory", ["windowed", "hybrid"])
def test_an_agent_memory_that_compresses_nothing_sends_the_full_history(
    make_config: Any, tmp_path: Path, tau_bench_path: Path, agent_memory: str
) -> None:
    cfg = make_config(
        "dataset=tau_bench",
        f"dataset.path={tau_bench_path}",
        f"dataset.max_dialogues={DIALOGUES}",
        f"agent_memory={agent_memory}",
        "agent_memory.compressor.max_items=100000",
    )
    result = run_experiment(cfg, tmp_path / agent_memory)
    calls = pd.read_csv(result.run_dir / "calls.csv")
    assert result.metrics["memory.compress.count"] == 0 and len(calls) > 200
    assert (calls.prompt_tokens == calls.full_tokens).all()
    assert result.metrics["tokens.saved_ratio"] == 0.0
