"""Memory tools through litellm's tool calling, end to end over HTTP against the local OpenAI-compatible server."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from openai_server import USAGE, OpenAIServer

from memlab.experiment import run_experiment
from memlab.metrics import model_price


def _config(make_config, server: OpenAIServer, tmp_path: Path):  # type: ignore[no-untyped-def]
    return make_config(
        "dataset=synthetic", "dataset.dialogues=1", "dataset.sessions=2", "dataset.turns_per_session=6",
        "longterm=chat", "longterm.memory_tools=true", "longterm.auto_extract=false", "llm=litellm",
        "llm.model=openai/gpt-4o-mini", f"llm.api_base={server.base_url}", "llm.api_key_env=MEMLAB_TEST_KEY",
        f"llm.cache_dir={tmp_path / 'cache'}", "llm.num_retries=0", "eval.answers=false",
    )  # fmt: skip


def test_the_model_calls_the_memory_tools_and_gets_tool_messages_back(
    make_config, openai_server: OpenAIServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEMLAB_TEST_KEY", "sk-test")
    cfg = _config(make_config, openai_server, tmp_path)
    first = run_experiment(cfg, tmp_path / "a")
    bodies = openai_server.bodies("/v1/chat/completions")
    made = openai_server.tool_calls_made()
    assert bodies and made, "the server must have been asked, and have answered with tool calls"
    # Every request offers the two memory tools as OpenAI function schemas.
    assert all({t["function"]["name"] for t in b["tools"]} == {"memory_save", "memory_search"} for b in bodies)
    # Each tool call the server made is executed and comes back in the next request as a `tool` message.
    for i, request in enumerate(openai_server.requests):
        for call in request["tool_calls"]:
            following = openai_server.requests[i + 1]["body"]["messages"]
            asked = [m for m in following if m["role"] == "assistant" and m.get("tool_calls")]
            assert call in asked[-1]["tool_calls"]
            (answer,) = [m for m in following if m["role"] == "tool" and m["tool_call_id"] == call["id"]]
            result = json.loads(answer["content"])
            assert ("saved" in result) if call["function"]["name"] == "memory_save" else ("results" in result)
    m = first.metrics
    saves = sum(c["function"]["name"] == "memory_save" for c in made)
    assert m["longterm.tool.saves"] + m["longterm.tool.dedup_rejected"] == saves > 0
    assert m["longterm.tool.searches"] == len(made) - saves and m["longterm.tool.errors"] == m["tool.unknown"] == 0
    calls = pd.read_csv(first.run_dir / "calls.csv", keep_default_na=False)
    assert [n for cell in calls["tool_calls"] for n in cell.split()] == [c["function"]["name"] for c in made]
    assert len(calls) == len(bodies)  # one recorded call per request the model answered
    # Each call is priced at the usage the provider returned, once: not again as an auxiliary call.
    price = model_price("gpt-4o-mini")  # the model the server answers as (pricing.model too)
    assert m["cost.prompt_usd"] == pytest.approx(len(bodies) * USAGE["prompt_tokens"] * price.input_per_token)
    assert m["cost.completion_usd"] == pytest.approx(len(bodies) * USAGE["completion_tokens"] * price.output_per_token)
    assert m["tokens.aux.total"] == m["cost.aux_usd"] == 0 and m["llm.calls"] == 0
    # A repeat is served from the response cache: no request, the same metrics.
    second = run_experiment(cfg, tmp_path / "b")
    assert len(openai_server.bodies("/v1/chat/completions")) == len(bodies)
    assert (first.run_dir / "metrics.json").read_bytes() == (second.run_dir / "metrics.json").read_bytes()


def test_arguments_naming_a_user_or_namespace_are_refused_over_http(
    make_config, openai_server: OpenAIServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEMLAB_TEST_KEY", "sk-test")
    openai_server.forged_tool_args = {"_userId": "someone-else", "_namespace": "agent:admin"}
    run = run_experiment(_config(make_config, openai_server, tmp_path), tmp_path / "a")
    made = openai_server.tool_calls_made()
    assert made and run.metrics["longterm.tool.errors"] == len(made)
    assert run.metrics["longterm.tool.saves"] == run.metrics["longterm.tool.searches"] == 0


@pytest.mark.parametrize("name", ["memory save", "", "memory_delete"])
def test_a_tool_the_model_misnames_is_an_error_result_and_the_run_goes_on(
    make_config, openai_server: OpenAIServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    """The tool message carried the call's name, which OpenAI refuses when it is not a valid function name: the
    next request got a 400 and the whole run ended with nothing published (an outside audit)."""
    monkeypatch.setenv("MEMLAB_TEST_KEY", "sk-test")
    openai_server.forged_tool_name = name
    run = run_experiment(_config(make_config, openai_server, tmp_path), tmp_path / "a")
    made = openai_server.tool_calls_made()
    assert made and not openai_server.rejected  # every request after a misnamed call was one OpenAI accepts
    assert run.metrics["longterm.tool.saves"] == run.metrics["longterm.tool.searches"] == 0
    assert run.metrics["tool.unknown"] == len(made) == run.metrics["tool.calls"]  # counted (was in no metric)
    ids = {c["id"] for c in made}
    answers = [m for r in openai_server.requests for m in r["body"]["messages"] if m.get("tool_call_id") in ids]
    assert answers and all("unknown tool" in json.loads(m["content"])["error"] for m in answers)
