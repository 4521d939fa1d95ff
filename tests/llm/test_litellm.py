"""The litellm backends over a real HTTP round trip to a local OpenAI-compatible server (litellm not mocked)."""

from __future__ import annotations

import dataclasses
import json
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest
from openai_server import EMBEDDING_DIM, USAGE, OpenAIServer, embedding_of, reply_to, serve

from memlab.embed import LitellmEmbedder
from memlab.llm import TASK_CONTEXT_SUMMARY, LitellmChatModel, LLMAuthError, LLMError, LLMTimeout, LLMUnavailable
from memlab.trace import LLM_CALL, recording

MESSAGES = [
    {"role": "system", "content": "Summarize."},
    {"role": "user", "content": "Ann moved to Oslo in 2021"},
]


def make_model(server: OpenAIServer, tmp_path: Path, **overrides: object) -> LitellmChatModel:
    settings: dict = {
        "model": "openai/test-model",
        "api_base": server.base_url,
        "api_key": "sk-test-secret",
        "temperature": 0.3,
        "max_tokens": 77,
        "timeout": 10.0,
        "num_retries": 2,
        "retry_backoff_s": 0.0,
        "cache_dir": str(tmp_path / "cache"),
    }
    settings.update(overrides)
    return LitellmChatModel(**settings)  # type: ignore[arg-type]


@pytest.fixture
def slept(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """The seconds the test's thread was asked to sleep (a retry's wait), recorded instead of slept.

    Other threads (the local server, litellm's workers) sleep as usual and are not recorded.
    """
    waits: list[float] = []
    test_thread, real_sleep = threading.get_ident(), time.sleep

    def sleep(seconds: float) -> None:
        if threading.get_ident() == test_thread:
            waits.append(seconds)
        else:
            real_sleep(seconds)

    monkeypatch.setattr(time, "sleep", sleep)
    return waits


def test_request_response_and_usage(openai_server: OpenAIServer, tmp_path: Path) -> None:
    model = make_model(openai_server, tmp_path)
    with recording() as events:
        completion = model.complete(MESSAGES, task=TASK_CONTEXT_SUMMARY)
    [body] = openai_server.bodies("/v1/chat/completions")
    assert body["model"] == "test-model"
    assert body["messages"] == MESSAGES
    assert body["temperature"] == 0.3
    assert body["max_tokens"] == 77
    assert openai_server.requests[0]["authorization"] == "Bearer sk-test-secret"
    assert completion.text == reply_to(body) == "2021 in Oslo to moved Ann"
    assert (completion.prompt_tokens, completion.completion_tokens) == (
        USAGE["prompt_tokens"],
        USAGE["completion_tokens"],
    )
    assert not completion.cached
    [event] = [e for e in events if e.kind == LLM_CALL]
    assert event.data["backend"] == "litellm" and event.data["task"] == TASK_CONTEXT_SUMMARY
    assert event.data["prompt_tokens"] == USAGE["prompt_tokens"] and not event.data["failed"]


def test_call_max_tokens_overrides_the_configured_one(openai_server: OpenAIServer, tmp_path: Path) -> None:
    make_model(openai_server, tmp_path).complete(MESSAGES, max_tokens=9)
    assert openai_server.bodies("/v1/chat/completions")[0]["max_tokens"] == 9


def test_a_500_is_retried(openai_server: OpenAIServer, tmp_path: Path) -> None:
    openai_server.fail_with = [500, 503]
    completion = make_model(openai_server, tmp_path).complete(MESSAGES)
    assert len(openai_server.bodies("/v1/chat/completions")) == 3
    assert completion.text == "2021 in Oslo to moved Ann"


def test_retries_are_bounded_and_end_in_llm_error(openai_server: OpenAIServer, tmp_path: Path) -> None:
    openai_server.fail_with = [500, 500, 500, 500]
    with recording() as events, pytest.raises(LLMError, match="after 3 attempts"):
        make_model(openai_server, tmp_path, num_retries=2).complete(MESSAGES)
    assert len(openai_server.requests) == 3
    [event] = events
    assert event.data["failed"] and event.data["error"] == "LLMError"


def test_a_client_error_is_not_retried(openai_server: OpenAIServer, tmp_path: Path) -> None:
    openai_server.fail_with = [400]
    with pytest.raises(LLMError) as info:
        make_model(openai_server, tmp_path).complete(MESSAGES)
    assert not isinstance(info.value, LLMTimeout)
    assert len(openai_server.requests) == 1


def test_a_slow_server_is_a_timeout(openai_server: OpenAIServer, tmp_path: Path) -> None:
    """A server that has not answered when the timeout comes: a timeout, retried once, and both requests reached it.

    It answers nothing until the test is done (not a sleep the timeout must beat), and the test waits for the server
    to have read the second request: counted as the timeout was raised, a server thread held back 0.3 s (a loaded
    machine) had read only the first."""
    openai_server.answering.clear()
    with pytest.raises(LLMTimeout, match="timed out after 2 attempts"):
        make_model(openai_server, tmp_path, timeout=0.3, num_retries=1).complete(MESSAGES)
    assert openai_server.wait_for_requests(2)
    assert len(openai_server.requests) == 2  # a timeout is retried, and the retries are bounded


def test_the_disk_cache_answers_a_repeat_without_a_request(openai_server: OpenAIServer, tmp_path: Path) -> None:
    first = make_model(openai_server, tmp_path).complete(MESSAGES)
    # A new instance (another run of a sweep) over the same folder.
    with recording() as events:
        second = make_model(openai_server, tmp_path, api_key="another-key").complete(MESSAGES)
    assert len(openai_server.requests) == 1
    assert second.cached and (second.text, second.prompt_tokens) == (first.text, first.prompt_tokens)
    assert events[0].data["cached"] is True
    files = list((tmp_path / "cache").rglob("*.json"))
    assert len(files) == 1 and "sk-test-secret" not in files[0].read_text()
    assert json.loads(files[0].read_text())["request"]["messages"] == MESSAGES


@pytest.mark.parametrize(
    "change", [{"temperature": 0.9}, {"max_tokens": 12}, {"model": "openai/other-model"}, {"extra_params": {"seed": 3}}]
)
def test_a_changed_parameter_is_a_new_request(openai_server: OpenAIServer, tmp_path: Path, change: dict) -> None:
    make_model(openai_server, tmp_path).complete(MESSAGES)
    make_model(openai_server, tmp_path, **change).complete(MESSAGES)
    assert len(openai_server.requests) == 2


def test_no_cache_dir_caches_nothing(openai_server: OpenAIServer, tmp_path: Path) -> None:
    model = make_model(openai_server, tmp_path, cache_dir=None)
    model.complete(MESSAGES)
    assert not model.complete(MESSAGES).cached
    assert len(openai_server.requests) == 2


def test_api_key_env_is_read_at_call_time(openai_server: OpenAIServer, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("MEMLAB_TEST_KEY", "sk-from-env")
    make_model(openai_server, tmp_path, api_key=None, api_key_env="MEMLAB_TEST_KEY").complete(MESSAGES)
    assert openai_server.requests[0]["authorization"] == "Bearer sk-from-env"
    monkeypatch.delenv("MEMLAB_TEST_KEY")
    with pytest.raises(LLMAuthError, match="MEMLAB_TEST_KEY"):
        make_model(openai_server, tmp_path, api_key=None, api_key_env="MEMLAB_TEST_KEY", cache_dir=None).complete(
            MESSAGES
        )


def make_embedder(server: OpenAIServer, tmp_path: Path, **overrides: object) -> LitellmEmbedder:
    settings: dict = {
        "model": "openai/test-embedding",
        "dim": EMBEDDING_DIM,
        "api_base": server.base_url,
        "api_key": "sk-test-secret",
        "retry_backoff_s": 0.0,
        "batch_size": 2,
        "cache_dir": str(tmp_path / "embed"),
    }
    settings.update(overrides)
    return LitellmEmbedder(**settings)  # type: ignore[arg-type]


def test_embeddings_round_trip_batched_normalized_and_cached(openai_server: OpenAIServer, tmp_path: Path) -> None:
    texts = ["alpha", "beta", "gamma", "alpha"]
    vectors = make_embedder(openai_server, tmp_path).embed(texts)
    bodies = openai_server.bodies("/v1/embeddings")
    assert [b["input"] for b in bodies] == [["alpha", "beta"], ["gamma"]]  # distinct texts, batch_size 2
    assert all(b["model"] == "test-embedding" for b in bodies)
    assert vectors.dtype == np.float32 and vectors.shape == (4, EMBEDDING_DIM)
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, rtol=1e-6)
    expected = np.asarray(embedding_of("beta"), dtype=np.float32)
    np.testing.assert_allclose(vectors[1], expected / np.linalg.norm(expected), rtol=1e-6)
    np.testing.assert_array_equal(vectors[0], vectors[3])
    again = make_embedder(openai_server, tmp_path).embed(["gamma", "delta"])  # a new run: only delta is asked
    assert openai_server.bodies("/v1/embeddings")[-1]["input"] == ["delta"]
    np.testing.assert_array_equal(again[0], vectors[2])


def test_embeddings_retry_a_500_and_check_the_width(openai_server: OpenAIServer, tmp_path: Path) -> None:
    openai_server.fail_with = [500]
    make_embedder(openai_server, tmp_path).embed(["alpha"])
    assert len(openai_server.requests) == 2
    with pytest.raises(LLMError, match=r"embedder\.dim=8"):
        make_embedder(openai_server, tmp_path, dim=16, cache_dir=None).embed(["alpha"])


@pytest.mark.parametrize("retries", [0, 1])
def test_embedding_retries_are_memlabs_alone(openai_server: OpenAIServer, tmp_path: Path, retries: int) -> None:
    """litellm's OpenAI embedding path reads ``max_retries or DEFAULT_MAX_RETRIES``, so memlab's 0 became the
    OpenAI client's 2 hidden retries: num_retries=0 sent 3 requests and said it had failed after 1 attempt."""
    openai_server.fail_with = [500] * 10
    with pytest.raises(LLMError, match=f"after {retries + 1} attempt"):
        make_embedder(openai_server, tmp_path, num_retries=retries, cache_dir=None).embed(["alpha"])
    assert len(openai_server.bodies("/v1/embeddings")) == retries + 1


def _chat_reply(choices: list, content_type: str = "chat.completion") -> tuple[int, dict, dict]:
    body = {"id": "x", "object": content_type, "created": 0, "model": "test-model", "choices": choices, "usage": USAGE}
    return 200, body, {}


@pytest.mark.parametrize(
    ("choices", "message"),
    [
        ([], "malformed response without a first choice"),
        ([{"index": 0, "message": {"role": "assistant", "content": {"text": "?"}}}], "Invalid response object"),
    ],
)
def test_a_malformed_response_is_an_llm_error(
    openai_server: OpenAIServer, tmp_path: Path, choices: list, message: str
) -> None:
    """The defect: a 200 with ``choices: []`` escaped as IndexError and killed the run."""
    openai_server.replies = [_chat_reply(choices)] * 3
    with recording() as events, pytest.raises(LLMError, match=message):
        make_model(openai_server, tmp_path).complete(MESSAGES)
    assert [e.data["error"] for e in events if e.kind == LLM_CALL] == ["LLMError"]  # counted as a failed call


def test_retry_after_is_honoured_up_to_the_cap(openai_server: OpenAIServer, tmp_path: Path, slept: list[float]) -> None:
    limited = (429, {"error": {"message": "slow down", "type": "rate_limit", "code": 429}}, {"Retry-After": "1.2"})
    openai_server.replies = [limited]
    make_model(openai_server, tmp_path, cache_dir=None).complete(MESSAGES)
    assert len(openai_server.requests) == 2 and slept == [1.2]  # the backoff alone would be 0 s
    openai_server.replies = [(*limited[:2], {"Retry-After": "3600"})]
    make_model(openai_server, tmp_path, cache_dir=None, max_retry_after_s=0.2).complete(MESSAGES)
    assert len(openai_server.requests) == 4 and slept == [1.2, 0.2]  # capped, not an hour


def test_refused_credentials_fail_fast_naming_the_variable(openai_server: OpenAIServer, tmp_path: Path) -> None:
    openai_server.replies = [(401, {"error": {"message": "bad key", "type": "invalid_request_error"}}, {})] * 3
    with pytest.raises(LLMAuthError) as info:
        make_model(openai_server, tmp_path, api_key=None, api_key_env="MEMLAB_TEST_KEY_X").complete(MESSAGES)
    assert len(openai_server.requests) == 0  # the unset variable is reported before any request
    with pytest.raises(LLMAuthError) as info:
        make_model(openai_server, tmp_path, num_retries=5).complete(MESSAGES)
    assert len(openai_server.requests) == 1  # never retried
    assert "authentication failed; check llm.api_key" in str(info.value) and "\n" not in str(info.value)


def test_a_missing_key_is_not_retried_and_names_the_variable(monkeypatch, slept: list[float]) -> None:
    """The defect: litellm reports a missing key as a 500; it was retried for every call of the run."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    model = LitellmChatModel(model="openai/gpt-4o-mini", num_retries=3, retry_backoff_s=5.0)
    with pytest.raises(LLMAuthError, match=r"llm: openai/gpt-4o-mini: authentication failed; set OPENAI_API_KEY"):
        model.complete(MESSAGES)
    assert slept == []  # no backoff: a retry would have waited 5 s first


DOWN = "http://127.0.0.1:9/v1"  # no server listens on port 9 (discard) here


def test_a_server_that_is_down_stops_the_run_at_the_first_call(slept: list[float]) -> None:
    """The defect: a connection refused on every call ran a whole run on fallbacks and exited 0. A model that has
    not answered once and whose retries end without a connection raises LLMUnavailable (the run stops), naming
    the URL; its retries still run first (a server starting up gets them)."""
    model = LitellmChatModel("openai/test-model", api_base=DOWN, api_key="sk-test-secret", num_retries=2)
    with pytest.raises(LLMUnavailable) as info:
        model.complete(MESSAGES)
    said = str(info.value)
    assert said.startswith(f"llm: openai/test-model at {DOWN} is unreachable (it has not answered once in this run)")
    assert "Connection error" in said and "\n" not in said and "sk-test-secret" not in said
    assert slept == [1.0, 2.0]


def test_a_model_the_server_does_not_serve_stops_the_run(openai_server: OpenAIServer, tmp_path: Path) -> None:
    """A 404 (no such model or path) before any answer stops the run at once: it is not retried."""
    openai_server.fail_with = [404] * 5
    with pytest.raises(LLMUnavailable, match=r"^llm: openai/test-model at http://127\.0\.0\.1:\d+/v1 is not served"):
        make_model(openai_server, tmp_path).complete(MESSAGES)
    assert len(openai_server.requests) == 1


def test_once_answered_a_lost_server_is_a_failed_call(openai_server: OpenAIServer, tmp_path: Path) -> None:
    """After an answer, a 404 or a refused connection is an LLMError, which the strategies fall back from, and the
    embedder's the same; a new model (another run) that never got an answer stops."""
    openai_server.fail_after, openai_server.fail_with = 1, [404] * 5
    model = make_model(openai_server, tmp_path, cache_dir=None)
    model.complete(MESSAGES)
    with pytest.raises(LLMError) as info:
        model.complete(MESSAGES)
    assert not isinstance(info.value, LLMUnavailable)
    with serve() as lost:  # a server that answered, then went away (its port now refuses the connection)
        model = make_model(lost, tmp_path, cache_dir=None, num_retries=0)
        model.complete(MESSAGES)
    with pytest.raises(LLMError, match="Connection error") as info:
        model.complete(MESSAGES)
    assert not isinstance(info.value, LLMUnavailable)
    with pytest.raises(LLMUnavailable, match="is not served"):
        make_model(openai_server, tmp_path, cache_dir=None).complete(MESSAGES)
    embedder = make_embedder(openai_server, tmp_path, api_base=DOWN, num_retries=0, cache_dir=None)
    with pytest.raises(LLMUnavailable, match=f"^embedder: openai/test-embedding at {DOWN} is unreachable"):
        embedder.embed(["alpha"])


def test_a_copy_for_another_url_has_not_answered(openai_server: OpenAIServer, tmp_path: Path) -> None:
    """The defect: a `dataclasses.replace` copy of a provider shared its "answered" record whatever it changed, so a
    copy for another URL that no server serves fell back as a passing outage instead of stopping the run. A copy
    with another setting of the same model at the same URL has answered (it reaches the same server)."""
    model = make_model(openai_server, tmp_path, cache_dir=None)
    model.complete(MESSAGES)
    answered = model.provider
    model.provider = dataclasses.replace(answered, timeout=5.0)
    openai_server.fail_with = [404]
    with pytest.raises(LLMError) as info:
        model.complete(MESSAGES)
    assert not isinstance(info.value, LLMUnavailable)  # the same model at the same URL: a failed call
    model.provider = dataclasses.replace(answered, api_base=DOWN, num_retries=0)
    with pytest.raises(LLMUnavailable, match=f"at {DOWN} is unreachable"):
        model.complete(MESSAGES)


def test_an_embedding_outage_after_answers_ends_the_run_saying_why(openai_server: OpenAIServer, tmp_path: Path) -> None:
    """An embedding has no fallback (a memory or a query without its vector would be missing from retrieval
    silently), so a failed embedding call ends the run even after the embedder answered; the defect was a line that
    did not say so, while the docs said a restarting server does not end a long run."""
    embedder = make_embedder(openai_server, tmp_path, num_retries=1, cache_dir=None)
    embedder.embed(["alpha"])
    openai_server.fail_with = [503, 503]
    with pytest.raises(LLMError) as info:
        embedder.embed(["beta"])
    said = str(info.value)
    assert said.startswith("embedder: an embedding call failed and embeddings have no fallback, so the run stops")
    assert "embedder.num_retries" in said and "after 2 attempts" in said and "503" in said
    assert info.value.attempts == 2 and "\n" not in said


TOOL_CALL = {"id": "call_1", "type": "function", "function": {"name": "memory_search", "arguments": '{"q": "x"}'}}
TOOL = {"type": "function", "function": {"name": "memory_search", "parameters": {"type": "object"}}}


def test_tool_calls_to_a_request_without_tools_are_a_failed_call_never_cached(
    openai_server: OpenAIServer, tmp_path: Path
) -> None:
    """The defect: a reply of tool calls (content null) to a summary's request, which offered no tools, was cached,
    and every later run replayed it as an empty summary without asking. It is now an LLMError (the strategy falls
    back, the call counts as failed, its billed usage counted); the same reply to a request with tools is one."""
    message = {"role": "assistant", "content": None, "tool_calls": [TOOL_CALL]}
    unasked = _chat_reply([{"index": 0, "message": message, "finish_reason": "tool_calls"}])
    openai_server.replies = [unasked]
    with recording() as events, pytest.raises(LLMError, match="offered no tools"):
        make_model(openai_server, tmp_path).complete(MESSAGES)
    [event] = events
    assert event.data["failed"] and event.data["prompt_tokens"] == USAGE["prompt_tokens"]
    again = make_model(openai_server, tmp_path).complete(MESSAGES)  # a later run asks again
    assert again.text == "2021 in Oslo to moved Ann" and not again.cached and len(openai_server.requests) == 2
    openai_server.replies = [unasked]
    called = make_model(openai_server, tmp_path).complete(MESSAGES, tools=[TOOL])
    assert [c.name for c in called.tool_calls] == ["memory_search"]
    cached = make_model(openai_server, tmp_path).complete(MESSAGES, tools=[TOOL])
    assert cached.cached and cached.tool_calls == called.tool_calls and len(openai_server.requests) == 3


def test_a_cache_holding_tool_calls_to_a_request_without_tools_asks_again(
    openai_server: OpenAIServer, tmp_path: Path
) -> None:
    """A cache written before such replies were refused holds them: it is asked again and heals, not replayed."""
    from memlab.llm.cache import ResponseCache, request_key

    model = make_model(openai_server, tmp_path)
    model.complete(MESSAGES)
    [path] = (tmp_path / "cache").rglob("*.json")
    request = json.loads(path.read_text())["request"]
    stored = {"text": "", "prompt_tokens": 1, "completion_tokens": 1, "model": "m", "tool_calls": [TOOL_CALL]}
    ResponseCache(str(tmp_path / "cache")).put(request_key(request), request, stored)
    healed = make_model(openai_server, tmp_path).complete(MESSAGES)
    assert healed.text == "2021 in Oslo to moved Ann" and not healed.cached and len(openai_server.requests) == 2
    assert make_model(openai_server, tmp_path).complete(MESSAGES).cached


def test_retries_are_recorded_on_the_call(openai_server: OpenAIServer, tmp_path: Path) -> None:
    """The defect: a call retried twice recorded the same event as a clean one, so a flaky provider read as a healthy
    one. The LLM_CALL event holds its `attempts`: the requests sent (0 when the cache answered)."""
    openai_server.fail_with = [500, 503]
    with recording() as events:
        make_model(openai_server, tmp_path).complete(MESSAGES)
        make_model(openai_server, tmp_path).complete(MESSAGES)
    openai_server.fail_with = [500] * 3
    with recording() as failed, pytest.raises(LLMError):
        make_model(openai_server, tmp_path, cache_dir=None, num_retries=1).complete(MESSAGES)
    assert [e.data["attempts"] for e in events] == [3, 0] and len(openai_server.requests) == 3 + 2
    assert [(e.data["attempts"], e.data["failed"]) for e in failed] == [(2, True)]


SSE = (
    b'data: {"id":"c","object":"chat.completion.chunk","created":0,"model":"test-model","choices":[{"index":0,'
    b'"delta":{"role":"assistant","content":"hi"},"finish_reason":null}]}\n\ndata: [DONE]\n\n'
)


@pytest.mark.parametrize(
    ("body", "content_type"),
    [(b'{"id": "x", "choices": [{"message": {"content": "cut', "application/json"), (SSE, "text/event-stream")],
    ids=["malformed-json", "stream"],
)
def test_a_200_reply_that_cannot_be_read_is_labelled_so_and_not_retried(
    openai_server: OpenAIServer, tmp_path: Path, body: bytes, content_type: str
) -> None:
    """The defect: litellm reports a 200 whose body is not a completion (cut JSON, a stream) as a 500, so memlab
    labelled it ``InternalServerError (500)`` and retried it twice, tripling the requests for the same reply."""
    from memlab.llm.base import failure_label

    openai_server.replies = [(200, body, {"Content-Type": content_type})] * 3
    with recording() as events, pytest.raises(LLMError) as info:
        make_model(openai_server, tmp_path, num_retries=2).complete(MESSAGES)
    assert len(openai_server.requests) == 1
    assert failure_label(info.value) == "InvalidResponse (200)"
    [event] = events
    assert (event.data["cause"], event.data["status"], event.data["attempts"]) == ("InvalidResponse", 200, 1)


def test_a_reply_without_a_choice_counts_the_usage_it_was_billed(openai_server: OpenAIServer, tmp_path: Path) -> None:
    """The defect: a 200 with ``choices: []`` and ``usage`` (a content-filtered reply, billed) was priced at 0."""
    openai_server.replies = [_chat_reply([])]
    with recording() as events, pytest.raises(LLMError, match="without a first choice"):
        make_model(openai_server, tmp_path).complete(MESSAGES)
    [event] = events
    assert event.data["failed"] and event.data["model"] == "test-model"
    assert (event.data["prompt_tokens"], event.data["completion_tokens"]) == (
        USAGE["prompt_tokens"],
        USAGE["completion_tokens"],
    )


def test_building_a_model_imports_litellm_so_no_call_times_it(openai_server: OpenAIServer, tmp_path: Path) -> None:
    """The defect: litellm's import (seconds) ran inside the first call's timed block, so `latency.model` (and
    the first retrieval's and extraction's) held it. Building the chat model or the embedder now imports it."""
    from memlab.litellm_offline import import_litellm

    for build in (make_model, make_embedder):
        import_litellm.cache_clear()
        build(openai_server, tmp_path)
        assert import_litellm.cache_info().currsize == 1, build.__name__


def test_an_empty_answer_is_not_cached(openai_server: OpenAIServer, tmp_path: Path) -> None:
    openai_server.replies = [_chat_reply([{"index": 0, "message": {"role": "assistant", "content": ""}}])]
    assert make_model(openai_server, tmp_path).complete(MESSAGES).text == ""
    again = make_model(openai_server, tmp_path).complete(MESSAGES)
    assert again.text == "2021 in Oslo to moved Ann" and not again.cached and len(openai_server.requests) == 2


def test_a_request_holding_its_lock_blocks_few_others(tmp_path: Path) -> None:
    """The defect: the lock a request holds while it asks (through its retries and a server's Retry-After, up to a
    minute) was its 2-hex-digit shard's, so a concurrent run's request in the same shard, one in 256, waited for
    it. Another key of that shard now takes its own lock; the same key still waits."""
    from memlab.llm.cache import ResponseCache, request_key

    keys = [request_key({"i": i}) for i in range(5000)]
    first = keys[0]
    other = next(k for k in keys if k[:2] == first[:2] and k[2:4] != first[2:4])
    cache, held, release = ResponseCache(tmp_path), threading.Event(), threading.Event()

    def hold() -> None:
        with cache.lock(first):
            held.set()
            release.wait(60)

    def take(key: str, taken: threading.Event) -> None:
        with cache.lock(key):
            taken.set()

    holder = threading.Thread(target=hold)
    holder.start()
    assert held.wait(60)
    got_other, got_same = threading.Event(), threading.Event()
    threading.Thread(target=take, args=(other, got_other), daemon=True).start()
    same = threading.Thread(target=take, args=(first, got_same), daemon=True)
    same.start()
    assert got_other.wait(60)  # the other key's lock was free
    assert not got_same.wait(0.5)  # the same key's was not: its taker waits (given time to reach the lock)
    release.set()
    holder.join()
    assert got_same.wait(60)


def test_concurrent_runs_sharing_the_cache_pay_once(openai_server: OpenAIServer, tmp_path: Path) -> None:
    openai_server.delay_s = 0.3
    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(lambda _: make_model(openai_server, tmp_path).complete(MESSAGES), range(4)))
    assert len(openai_server.requests) == 1
    assert sorted(r.cached for r in results) == [False, True, True, True]
