"""The peers' model path end to end: `llm=litellm` over HTTP to the local OpenAI-compatible server.

mem0's extraction (`infer: true`) and llama-index's `FactExtractionMemoryBlock` (`facts: true`) call memlab's
model through the adapters; the server (tests/llm/openai_server.py) answers each request with well-formed output
in the library's own format (mem0: its JSON object; llama-index: ``<facts>`` XML). The run's records must hold
every call: `llm.calls`, aux tokens (the server's usage per call) and aux cost, and the memories the library made
from the answers, each citing the turns of the round (mem0) it was extracted from.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

for _library in ("llama_index.core", "mem0", "qdrant_client"):
    pytest.importorskip(_library, reason=f"{_library} is not installed: pip install 'memlab[peers]'")

from memlab.api import compose, run  # noqa: E402  (after the skip)
from memlab.longterm import RESULT_EVIDENCE  # noqa: E402
from memlab.sim import ProbeRecord  # noqa: E402

SLICE = ("dataset=locomo", "context=none", "dataset.sample_ids=[conv-26]", "sim.max_sessions=1", "sim.workers=1")
REPLIES = 400  # more than the slice's rounds: one answer per request, in order


def _completion(content: str) -> tuple[int, dict[str, Any], dict[str, str]]:
    message = {"role": "assistant", "content": content}
    usage = {"prompt_tokens": 17, "completion_tokens": 5, "total_tokens": 22}
    body = {"id": "chatcmpl-1", "object": "chat.completion", "created": 0, "model": "gpt-4o-mini", "usage": usage}
    return 200, {**body, "choices": [{"index": 0, "message": message, "finish_reason": "stop"}]}, {}


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
