"""Requests a real provider accepts: the strict server's rules, every experiment replayed against it, model errors.

The local server (tests/llm/openai_server.py) answers 400 with OpenAI's error body to what OpenAI's chat
completions endpoint refuses, and counts it. Each named experiment (conf/experiment, read from Hydra's
repository) runs its first job on the debug slice, as tests/test_experiments.py does, with `llm=litellm`
at the server and the memory tools on with the model choosing them (`policy=model`), so that every
assistant turn's request reaches the server besides the summaries, extractions and answers it asks for.
A sweep's first job runs as a single run (`hydra.mode=RUN`, each swept choice at its first value; an optuna
range at the entry's default): the requests are the job's, and the sweep's comparison page, which asks the
model nothing, cost a third of each sweep here (tests/test_experiments.py runs the sweeps as sweeps).
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from entries import one_job, options, repository
from hydra import compose
from hydra.types import RunMode
from openai_server import OpenAIServer

from memlab.dialogues import load_locomo

TINY = ("debug=default", "sim.workers=1")
USER = {"role": "user", "content": "Where did I fly in May?"}
CALL = {"id": "call_1", "type": "function", "function": {"name": "memory_search", "arguments": "{}"}}
ASKED = {"role": "assistant", "content": None, "tool_calls": [CALL]}
ANSWER = {"role": "tool", "tool_call_id": "call_1", "content": "{}"}
SECOND_ANSWER = {"role": "tool", "tool_call_id": "call_2", "content": "{}"}
TOOL = {"type": "function", "function": {"name": "memory_search", "parameters": {"type": "object", "properties": {}}}}


def post(server: OpenAIServer, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    """POST `body` to the server's chat completions endpoint: (status, JSON answer)."""
    data = json.dumps({"model": "gpt-4o-mini", **body}).encode()
    request = urllib.request.Request(f"{server.base_url}/chat/completions", data, {"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


REFUSED = {
    "empty messages": ({"messages": []}, "empty array"),
    "unknown role": ({"messages": [{"role": "narrator", "content": "x"}]}, "'messages[0].role'"),
    "null user content": ({"messages": [{"role": "user", "content": None}]}, "got null"),
    "number content": ({"messages": [{"role": "user", "content": 3}]}, "content parts"),
    "untyped part": ({"messages": [{"role": "user", "content": [{"text": "x"}]}]}, "content part"),
    "image part from the assistant": (
        {"messages": [USER, {"role": "assistant", "content": [{"type": "image_url", "image_url": {"url": "u"}}]}]},
        "for role 'assistant'",
    ),
    "name with a space": ({"messages": [{**USER, "name": "Ann Lee"}]}, "'messages[0].name'"),
    "tool result answering nothing": ({"messages": [USER, ANSWER]}, "tool_call_id 'call_1' answers none"),
    "tool result after a user turn": ({"messages": [USER, ASKED, ANSWER, USER, ANSWER]}, "answers none"),
    "call without its result": ({"messages": [USER, ASKED, USER]}, "did not have response messages: call_1"),
    "call without its result, last": ({"messages": [USER, ASKED]}, "did not have response messages"),
    "tool call without an id": (
        {"messages": [USER, {**ASKED, "tool_calls": [{"type": "function", "function": CALL["function"]}]}]},
        "'messages[1].tool_calls[0]'",
    ),
    "empty tools": ({"messages": [USER], "tools": []}, "'tools': empty array"),
    "tool name with a space": (
        {"messages": [USER], "tools": [{"type": "function", "function": {"name": "memory search"}}]},
        "'tools[0].function.name'",
    ),
    "tool of another type": ({"messages": [USER], "tools": [{"type": "retrieval"}]}, "'tools[0]'"),
    "parameters not an object schema": (
        {"messages": [USER], "tools": [{"type": "function", "function": {"name": "f", "parameters": {"type": "int"}}}]},
        "schema must be a JSON Schema",
    ),
}  # fmt: skip


@pytest.mark.parametrize("case", REFUSED)
def test_the_server_refuses_what_openai_refuses_with_its_error_body(openai_server: OpenAIServer, case: str) -> None:
    body, reason = REFUSED[case]
    status, answer = post(openai_server, body)
    assert status == 400 and answer["error"]["type"] == "invalid_request_error"
    assert reason in answer["error"]["message"]
    assert openai_server.rejected == [answer["error"]["message"]]
    openai_server.rejected.clear()


def test_the_server_accepts_what_openai_accepts(openai_server: OpenAIServer) -> None:
    parts = {
        "role": "user",
        "content": [{"type": "text", "text": "hi"}, {"type": "image_url", "image_url": {"url": "u"}}],
    }
    accepted = [
        {"messages": [{"role": "system", "content": "Be brief."}]},  # a system prompt alone
        {"messages": [USER, ASKED, ANSWER, {"role": "assistant", "content": "Lisbon."}, USER], "tools": [TOOL]},
        {"messages": [{**USER, "name": "Ann_Lee"}, {"role": "assistant", "content": ""}, parts]},
        {"messages": [USER, {**ASKED, "tool_calls": [CALL, {**CALL, "id": "call_2"}]}, SECOND_ANSWER, ANSWER]},
    ]  # fmt: skip
    assert [post(openai_server, body)[0] for body in accepted] == [200] * len(accepted)


def litellm_at(server: OpenAIServer, cache: Path) -> list[str]:
    """Overrides that send the run's model calls to `server`, failing at once (no retries)."""
    return [
        "llm=litellm", "llm.model=openai/gpt-4o-mini", f"llm.api_base={server.base_url}",
        "llm.api_key_env=MEMLAB_TEST_KEY", "llm.num_retries=0", f"llm.cache_dir={cache}",
    ]  # fmt: skip


@pytest.mark.parametrize("name", options("experiment"))
def test_every_experiment_sends_only_requests_openai_accepts(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    memlab_cli: Callable[..., int],
    shared_corpora: Path,
    openai_server: OpenAIServer,
    name: str,
) -> None:
    monkeypatch.setenv("MEMLAB_TEST_KEY", "sk-test")
    monkeypatch.chdir(tmp_path)
    with repository():
        cfg = compose("config", overrides=[f"experiment={name}", *TINY], return_hydra_config=True)
    data = Path(str(cfg.dataset.get("path") or ""))
    if data.is_relative_to(shared_corpora) and not data.is_file():
        pytest.skip(f"experiment={name} reads {data}: not found (set MEMLAB_SHARED to the folder holding datasets/)")
    tools = [] if cfg.longterm.get("memory_tools") else ["longterm=chat"]
    cut = [*one_job(cfg.hydra.sweeper), "hydra.mode=RUN"] if cfg.hydra.mode == RunMode.MULTIRUN else []
    out = tmp_path / "out"
    llm = litellm_at(openai_server, tmp_path / "cache")
    status = memlab_cli(
        "run", f"experiment={name}", *TINY, *cut, *tools, "policy=model", *llm, f"hydra.run.dir={out}"
    )  # fmt: skip
    assert (out / "metrics.json").is_file()  # one run, in the folder named
    asked = openai_server.bodies("/v1/chat/completions")
    assert openai_server.rejected == [], f"{len(openai_server.rejected)} of {len(asked)} requests refused"
    assert status == 0 and any(body.get("tools") for body in asked), f"exit {status} after {len(asked)} requests"


def test_a_conversation_the_assistant_opens_asks_the_model_nothing_first(
    make_config, openai_server: OpenAIServer, locomo_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first session of each dev7 conversation with the tools on: 5 of the 7 open with speaker_b (the assistant)."""
    monkeypatch.setenv("MEMLAB_TEST_KEY", "sk-test")
    cfg = make_config(
        "dataset=locomo", f"dataset.path={locomo_path}", "sim.max_sessions=1", "sim.workers=1", "longterm=chat",
        "longterm.auto_extract=false", "policy=model", *litellm_at(openai_server, tmp_path / "cache"),
    )  # fmt: skip
    from memlab.experiment import run_experiment

    run = run_experiment(cfg, tmp_path / "run")
    opened = {d.id for d in load_locomo(locomo_path) if d.sessions[0].messages[0].role == "assistant"}
    assert len(opened) == 5
    calls = pd.read_csv(run.run_dir / "calls.csv", keep_default_na=False)
    empty = calls[calls["messages_kept"] == 0]
    assert set(empty["dialogue"]) == opened and len(empty) == len(opened)  # recorded, as every assistant turn
    assert (empty["tool_calls"] == "").all()
    asked = openai_server.bodies("/v1/chat/completions")
    assert openai_server.rejected == [] and len(asked) == len(calls) - len(opened)  # every other round asked once


@pytest.mark.parametrize("status", [400, 500])
def test_a_model_error_mid_run_ends_with_one_line_and_publishes_nothing(
    status: int,
    openai_server: OpenAIServer,
    memlab_cli: Callable[..., int],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("MEMLAB_TEST_KEY", "sk-test")
    monkeypatch.chdir(tmp_path)
    openai_server.fail_after, openai_server.fail_with = 5, [status]
    out = tmp_path / "run"
    code = memlab_cli(
        "run", "debug=default", "longterm=chat", "policy=model", *litellm_at(openai_server, tmp_path / "cache"),
        f"hydra.run.dir={out}",
    )  # fmt: skip
    err = capsys.readouterr().err
    assert code == 1 and len(openai_server.requests) == 6
    (line,) = err.strip().splitlines()
    assert line.startswith("memlab: error: a model call failed mid-run; nothing was published: LLMError: ")
    assert f"injected {status}" in line and not out.exists()


def test_a_sweep_marks_the_job_a_model_error_ended_and_goes_on(
    openai_server: OpenAIServer,
    memlab_cli: Callable[..., int],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("MEMLAB_TEST_KEY", "sk-test")
    monkeypatch.chdir(tmp_path)
    openai_server.fail_after, openai_server.fail_with = 5, [400]
    out = tmp_path / "sweep"
    code = memlab_cli(
        "run", "-m", "debug=default", "longterm=chat", "policy=model", "context=none,trim",
        *litellm_at(openai_server, tmp_path / "cache"), f"hydra.sweep.dir={out}",
    )  # fmt: skip
    (first,), (second,) = out.glob("0_context=none"), out.glob("1_context=trim")  # job folders name what they vary
    error = json.loads((first / "error.json").read_text())
    assert code == 1 and error["type"] == "LLMError" and "injected 400" in error["message"]
    assert (second / "metrics.json").is_file()  # the next job ran (its requests were answered)
