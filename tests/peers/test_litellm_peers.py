"""The peers' model path end to end: `llm=litellm` over HTTP to the local OpenAI-compatible server.

mem0's extraction (`infer: true`), llama-index's `FactExtractionMemoryBlock` (`facts: true`), LangMem's memory
store manager (`extract: true`, trustcall's tool calls) and LangMem's summarization call memlab's model through
the adapters; the server (tests/llm/openai_server.py) answers each request with well-formed output in the
library's own format (mem0: its JSON object; llama-index: ``<facts>`` XML; LangMem: a ``Memory`` tool call).
The run's records must hold every call: `llm.calls`, aux tokens (the server's usage per call) and aux cost, and
the memories the library made from the answers, each citing the turns of the round (mem0, LangMem) it came from.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from requires import require

require("llama_index.core", "mem0", "qdrant_client", "langmem", "trustcall")

from memlab.api import compose, run  # noqa: E402  (after the skip)
from memlab.longterm import RESULT_EVIDENCE  # noqa: E402
from memlab.sim import ProbeRecord  # noqa: E402

SLICE = ("dataset=locomo", "context=none", "dataset.sample_ids=[conv-26]", "sim.max_sessions=1", "sim.workers=1")
REPLIES = 400  # more than the slice's rounds: one answer per request, in order


def _completion(content: str | None, calls: list[dict[str, Any]] | None = None) -> tuple[int, dict[str, Any], Any]:
    message: dict[str, Any] = {"role": "assistant", "content": content, **({"tool_calls": calls} if calls else {})}
    usage = {"prompt_tokens": 17, "completion_tokens": 5, "total_tokens": 22}
    body = {"id": "chatcmpl-1", "object": "chat.completion", "created": 0, "model": "gpt-4o-mini", "usage": usage}
    choice = {"index": 0, "message": message, "finish_reason": "tool_calls" if calls else "stop"}
    return 200, {**body, "choices": [choice]}, {}


def _memory_call(i: int) -> tuple[int, dict[str, Any], Any]:
    """trustcall's insert of one new memory: a call of LangMem's `Memory` tool, OpenAI's format."""
    arguments = json.dumps({"content": f"Fact number {i} about Caroline"})
    call = {"id": f"call_{i}", "type": "function", "function": {"name": "Memory", "arguments": arguments}}
    return _completion(None, [call])


@pytest.fixture
def server(openai_server_module: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    monkeypatch.setenv("MEMLAB_TEST_KEY", "sk-test")
    with openai_server_module.serve() as state:
        yield state
    assert state.rejected == [], f"requests OpenAI would refuse: {state.rejected}"


def _litellm(server: Any, cache: Path) -> list[str]:
    return [
        "llm=litellm", "llm.model=openai/gpt-4o-mini", f"llm.api_base={server.base_url}",
        "llm.api_key_env=MEMLAB_TEST_KEY", "llm.num_retries=0", f"llm.cache_dir={cache}",
    ]  # fmt: skip


def test_mem0_extracts_through_memlabs_model(server: Any, locomo_path: Path, tmp_path: Path) -> None:
    server.replies = [
        _completion(
            json.dumps({"memory": [{"id": "0", "text": f"Fact number {i} about Caroline", "attributed_to": "user"}]})
        )
        for i in range(REPLIES)
    ]
    cfg = compose(
        [
            "longterm=mem0",
            "longterm.infer=true",
            f"dataset.path={locomo_path}",
            *SLICE,
            *_litellm(server, tmp_path / "c"),
        ]
    )
    result = run(cfg, tmp_path / "run")
    asked = server.bodies("/v1/chat/completions")
    m = result.metrics
    assert asked and all(b["response_format"] == {"type": "json_object"} for b in asked)
    assert "Caroline" in asked[0]["messages"][-1]["content"]  # mem0's prompt carries the round's turns
    assert m["llm.calls"] == len(asked) == m["longterm.memories"]  # one fact per round, each new
    assert m["tokens.aux.prompt"] == 17 * len(asked) and m["tokens.aux.completion"] == 5 * len(asked)
    assert m["cost.aux_usd"] > 0
    probes = [r for r in result.records if isinstance(r, ProbeRecord)]
    cited = [ev for p in probes for ev in p.results[RESULT_EVIDENCE]]
    assert cited and all(1 <= len(ev) <= 2 for ev in cited)  # a fact cites the turns of its round
    assert m["longterm.recall@20"] > 0


def test_llamaindex_fact_block_extracts_through_memlabs_model(server: Any, locomo_path: Path, tmp_path: Path) -> None:
    server.replies = [_completion(f"<facts><fact>Fact number {i}</fact></facts>") for i in range(REPLIES)]
    cfg = compose([
        "longterm=llamaindex_memory", "longterm.facts=true", "longterm.token_limit=300", "longterm.token_flush_size=60",
        f"dataset.path={locomo_path}", *SLICE,
        *_litellm(server, tmp_path / "c"),
    ])  # fmt: skip
    result = run(cfg, tmp_path / "run")
    asked = server.bodies("/v1/chat/completions")
    m = result.metrics
    assert asked and m["llm.calls"] == len(asked) and m["tokens.aux.prompt"] == 17 * len(asked)
    assert m["longterm.memories"] > len(asked)  # the vector block's nodes and one fact per flush
    probes = [r for r in result.records if isinstance(r, ProbeRecord)]
    assert all(f"Fact number {len(asked) - 1}" in p.context_text for p in probes)  # every fact is injected


def test_langmem_store_manager_extracts_through_memlabs_model(server: Any, locomo_path: Path, tmp_path: Path) -> None:
    server.replies = [_memory_call(i) for i in range(REPLIES)]
    cfg = compose([
        "longterm=langmem", "longterm.extract=true", f"dataset.path={locomo_path}", *SLICE,
        *_litellm(server, tmp_path / "c"),
    ])  # fmt: skip
    result = run(cfg, tmp_path / "run")
    asked = server.bodies("/v1/chat/completions")
    m = result.metrics
    offered = [{t["function"]["name"] for t in b["tools"]} for b in asked]
    assert len(asked) > 2 and offered[0] == {"Memory"} and "tool_choice" not in asked[0]  # nothing stored yet
    # Once memories exist, trustcall offers an update (PatchDoc) beside an insert and asks for one ("any").
    assert all(o == {"PatchDoc", "Memory"} for o in offered[1:])
    assert all(b["tool_choice"] == "required" for b in asked[1:])
    memory_tool = next(t["function"] for t in asked[0]["tools"] if t["function"]["name"] == "Memory")
    assert memory_tool["parameters"]["required"] == ["content"]
    assert "Caroline" in json.dumps(asked[0]["messages"])  # LangMem's prompt carries the round's turns
    assert m["llm.calls"] == len(asked) == m["longterm.memories"]  # one insert per round, each new
    assert m["tokens.aux.prompt"] == 17 * len(asked) and m["tokens.aux.completion"] == 5 * len(asked)
    assert m["cost.aux_usd"] > 0
    probes = [r for r in result.records if isinstance(r, ProbeRecord)]
    assert all("Fact number" in p.context_text for p in probes)  # the stored memories are what is injected
    cited = [ev for p in probes for ev in p.results[RESULT_EVIDENCE]]
    assert cited and all(1 <= len(ev) <= 2 for ev in cited)  # a memory cites the turns of its round
    assert m["longterm.recall@20"] > 0 and "longterm.recall@1" in m


def test_langmem_summary_is_the_models_text(server: Any, locomo_path: Path, tmp_path: Path) -> None:
    server.replies = [_completion(f"Summary number {i} of the talk") for i in range(REPLIES)]
    cfg = compose([
        "memory=langmem_summary", "memory.strategy.max_tokens=600", f"dataset.path={locomo_path}",
        "dataset=locomo", "context=none", "dataset.sample_ids=[conv-26]", "sim.max_sessions=3", "sim.workers=1",
        *_litellm(server, tmp_path / "c"),
    ])  # fmt: skip
    result = run(cfg, tmp_path / "run")
    asked = server.bodies("/v1/chat/completions")
    m = result.metrics
    assert asked and m["llm.calls"] == len(asked) == m["summary.memory.count"]
    assert m["tokens.aux.prompt"] == 17 * len(asked) and m["tokens.aux.completion"] == 5 * len(asked)
    assert "tools" not in asked[0]
    probes = [r for r in result.records if isinstance(r, ProbeRecord)]
    assert any(f"Summary number {len(asked) - 1} of the talk" in p.context_text for p in probes)
