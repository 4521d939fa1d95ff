"""The litellm backends' settings, from Python and from a run's config, against the local OpenAI-compatible server."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from openai_server import EMBEDDING_DIM, OpenAIServer, serve, text_reply

from memlab.embed import LitellmEmbedder
from memlab.errors import MemlabError
from memlab.llm import TASK_CONTEXT_SUMMARY, LitellmChatModel, LLMError
from memlab.llm.cache import request_key
from memlab.metrics.events import event_metrics
from memlab.trace import recording

MESSAGES = [{"role": "system", "content": "Summarize."}, {"role": "user", "content": "Ann moved to Oslo in 2021"}]


def litellm_at(server: OpenAIServer, cache: Path) -> list[str]:
    """Overrides that send the run's model calls and embeddings to `server` (key: $MEMLAB_TEST_KEY), no retries."""
    return [
        "llm=litellm", "llm.model=openai/gpt-4o-mini", f"llm.api_base={server.base_url}",
        "llm.api_key_env=MEMLAB_TEST_KEY", "llm.num_retries=0", f"llm.cache_dir={cache / 'llm'}",
        "embedder=litellm", "embedder.model=openai/test-embedding", f"embedder.dim={EMBEDDING_DIM}",
        f"embedder.api_base={server.base_url}", "embedder.api_key_env=MEMLAB_TEST_KEY", "embedder.num_retries=0",
        f"embedder.cache_dir={cache / 'embed'}",
    ]  # fmt: skip


# The memory tools, chosen by the model: every assistant turn asks it (and extraction, the embedder).
TOOLS = ("longterm=chat", "policy=model")


@pytest.fixture
def run_at_server(
    openai_server: OpenAIServer,
    memlab_run_err: Callable[..., tuple[int, str]],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> Callable[..., tuple[int, str]]:
    """`run_at_server(*overrides) -> (status, stderr)`: `memlab run` on the debug slice from `tmp_path`, the model
    and the embedder at the server, caches in `tmp_path/cache` (`TOOLS` has the model asked every assistant turn)."""
    monkeypatch.setenv("MEMLAB_TEST_KEY", "sk-test")
    served = ["debug=default", *litellm_at(openai_server, tmp_path / "cache")]
    return lambda *overrides: memlab_run_err(*served, *overrides)


@pytest.mark.parametrize(
    ("override", "said"),
    [
        (
            "+llm.extra_params.api_key=sk-LEAK",
            "llm.extra_params.api_key: memlab passes api_key to litellm itself; name the variable holding the key in "
            "llm.api_key_env",
        ),
        (
            "+llm.extra_params.timeout=5",
            "llm.extra_params.timeout: memlab passes timeout to litellm itself; set llm.timeout",
        ),
        (
            "+embedder.extra_params.api_key=sk-LEAK",
            "embedder.extra_params.api_key: memlab passes api_key to litellm itself; name the variable holding the key "
            "in embedder.api_key_env",
        ),
    ],
)
def test_an_extra_param_memlab_passes_itself_stops_the_run_at_start_in_one_line(
    openai_server: OpenAIServer, run_at_server: Callable[..., tuple[int, str]], tmp_path: Path, override: str, said: str
) -> None:
    """The defect: litellm got api_key (timeout) twice, a 94-line traceback ending in TypeError at the first call."""
    status, stderr = run_at_server(*TOOLS, override, "output_dir=run")
    assert (status, stderr) == (2, f"memlab: error: {said}\n")
    assert openai_server.requests == [] and not (tmp_path / "run").exists()


def test_an_extra_param_memlab_passes_itself_is_refused_when_built(openai_server: OpenAIServer) -> None:
    with pytest.raises(MemlabError, match=r"^llm\.extra_params\.max_retries: .* set llm\.num_retries") as info:
        LitellmChatModel("openai/m", api_base=openai_server.base_url, extra_params={"top_p": 1, "max_retries": 9})
    assert "9" not in str(info.value)
    with pytest.raises(MemlabError, match=r"^embedder\.extra_params\.base_url: .*; set embedder\.api_base$"):
        LitellmEmbedder("openai/e", api_base=openai_server.base_url, extra_params={"base_url": "http://elsewhere"})


def test_header_secrets_come_from_the_environment_and_stay_out_of_the_cache(
    openai_server: OpenAIServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The defect: a gateway's key could only go in extra_params.extra_headers: into config.yaml, the manifest, the
    reports, every cache file and the cache key (rotating it dropped the cache)."""
    monkeypatch.setenv("MEMLAB_TEST_GATEWAY", "gw-SECRET-1")
    chat: dict = {
        "model": "openai/m",
        "api_base": openai_server.base_url,
        "api_key": "sk-test",
        "cache_dir": str(tmp_path),
    }
    chat["headers_env"] = {"X-Gateway-Key": "MEMLAB_TEST_GATEWAY"}
    titled = {"extra_headers": {"X-Title": "memlab"}}  # a header that is no secret, in extra_params: both are sent
    LitellmChatModel(**chat, extra_params=titled).complete(MESSAGES)
    LitellmEmbedder(**{**chat, "model": "openai/e", "dim": EMBEDDING_DIM}).embed(["alpha"])
    sent = [r["headers"] for r in openai_server.requests]
    assert [h["x-gateway-key"] for h in sent] == ["gw-SECRET-1"] * 2 and sent[0]["x-title"] == "memlab"
    assert not any("gw-SECRET" in f.read_text() for f in tmp_path.rglob("*.json"))
    monkeypatch.setenv("MEMLAB_TEST_GATEWAY", "gw-SECRET-2")  # rotated: the cache still answers
    assert LitellmChatModel(**chat, extra_params=titled).complete(MESSAGES).cached
    uncached = {**chat, "cache_dir": None}
    LitellmChatModel(**uncached).complete(MESSAGES)
    assert len(openai_server.requests) == 3 and openai_server.requests[-1]["headers"]["x-gateway-key"] == "gw-SECRET-2"
    monkeypatch.delenv("MEMLAB_TEST_GATEWAY")
    with pytest.raises(MemlabError, match=r"^llm\.headers_env\.X-Gateway-Key names MEMLAB_TEST_GATEWAY, which is not"):
        LitellmChatModel(**uncached).complete(MESSAGES)
    assert len(openai_server.requests) == 3


def test_a_header_secret_a_provider_echoes_is_masked_in_the_failed_calls_record(
    openai_server: OpenAIServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A failed call's recorded message (run.log shows it) masked the key, not a `headers_env` value held in a
    variable whose name says nothing of secrets (the chat model listed its key alone)."""
    monkeypatch.setenv("MEMLAB_TEST_GATEWAY_VALUE", "gw-SECRET-ECHOED")
    echoed = {"error": {"message": "gateway refused header gw-SECRET-ECHOED", "type": "invalid_request_error"}}
    openai_server.replies = [(400, echoed, {})]
    chat: dict = {"model": "openai/m", "api_base": openai_server.base_url, "api_key": "sk-test", "cache_dir": None}
    model = LitellmChatModel(**chat, num_retries=0, headers_env={"X-Gateway-Key": "MEMLAB_TEST_GATEWAY_VALUE"})
    with recording() as events, pytest.raises(LLMError):
        model.complete(MESSAGES)
    (failed,) = [e.data for e in events if e.data.get("failed")]
    assert "header ***" in failed["message"] and "gw-SECRET" not in json.dumps(failed)


def test_a_run_sends_header_secrets_and_writes_them_nowhere(
    openai_server: OpenAIServer,
    run_at_server: Callable[..., tuple[int, str]],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("MEMLAB_TEST_GATEWAY", "gw-SECRET")
    run, cache = tmp_path / "run", tmp_path / "cache"
    headers = [
        "+llm.headers_env.X-Gateway-Key=MEMLAB_TEST_GATEWAY",
        "+embedder.headers_env.X-Gateway-Key=MEMLAB_TEST_GATEWAY",
    ]
    status, stderr = run_at_server(*TOOLS, *headers, f"output_dir={run}")
    assert status == 0, stderr
    paths = {r["path"] for r in openai_server.requests}
    assert paths == {"/v1/chat/completions", "/v1/embeddings"}
    assert all(r["headers"]["x-gateway-key"] == "gw-SECRET" for r in openai_server.requests)
    written = [f for folder in (run, cache) for f in folder.rglob("*") if f.is_file()]
    assert {"config.yaml", "manifest.json", "report.md", "report.html"} <= {f.name for f in written}
    assert [f for f in written if b"gw-SECRET" in f.read_bytes()] == []
    assert "MEMLAB_TEST_GATEWAY" in (run / "config.yaml").read_text()  # the variable's name, not its value
    monkeypatch.delenv("MEMLAB_TEST_GATEWAY")
    asked = len(openai_server.requests)
    status, stderr = run_at_server(*TOOLS, *headers, f"output_dir={tmp_path / 'run2'}")
    said = "memlab: error: llm.headers_env.X-Gateway-Key names MEMLAB_TEST_GATEWAY, which is not set; export it\n"
    assert (status, stderr) == (2, said)
    assert len(openai_server.requests) == asked and not (tmp_path / "run2").exists()


@pytest.mark.parametrize("variable", ["OPENAI_API_BASE", "OPENAI_BASE_URL"])
def test_a_server_named_by_the_environment_is_part_of_the_cache_key(
    openai_server: OpenAIServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, variable: str
) -> None:
    """The defect: with api_base unset the cache key held `"api_base": null`, so a run against another server
    (the variable changed) was served the first server's answers."""
    for name in ("OPENAI_API_BASE", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    chat: dict = {"model": "openai/m", "api_key": "sk-test", "cache_dir": str(tmp_path / "llm")}
    embed: dict = {**chat, "model": "openai/e", "dim": EMBEDDING_DIM, "cache_dir": str(tmp_path / "embed")}
    monkeypatch.setenv(variable, openai_server.base_url)
    first = LitellmChatModel(**chat).complete(MESSAGES).text
    LitellmEmbedder(**embed).embed(["alpha"])
    with serve() as other:
        monkeypatch.setenv(variable, other.base_url)
        other.replies = [text_reply("the other server")]
        second = LitellmChatModel(**chat).complete(MESSAGES)
        LitellmEmbedder(**embed).embed(["alpha"])
        assert (second.text, second.cached) == ("the other server", False) and first != second.text
        assert [r["path"] for r in other.requests] == ["/v1/chat/completions", "/v1/embeddings"] and not other.rejected
        assert LitellmChatModel(**chat).complete(MESSAGES).cached  # each server's answers are kept apart
    assert len(openai_server.requests) == 2
    stored = {json.loads(f.read_text())["request"]["api_base"] for f in tmp_path.rglob("*.json")}
    assert stored == {openai_server.base_url, other.base_url}


def test_above_temperature_0_each_run_seed_draws_its_own_sample(openai_server: OpenAIServer, tmp_path: Path) -> None:
    """The defect: the seed was neither sent nor in the cache key, so every seed got the first seed's sample."""
    chat: dict = {"model": "openai/m", "api_base": openai_server.base_url, "api_key": "sk-test"}
    chat |= {"cache_dir": str(tmp_path), "temperature": 0.7}
    for seed in (1, 2, 1):
        LitellmChatModel(**chat, seed=seed).complete(MESSAGES)
    assert [body["seed"] for body in openai_server.bodies("/v1/chat/completions")] == [1, 2]  # seed 1 again: cached
    LitellmChatModel(**chat, seed=3, extra_params={"seed": 42}).complete(MESSAGES)  # the user's own seed wins
    assert openai_server.bodies("/v1/chat/completions")[-1]["seed"] == 42
    # At temperature 0 the seed is neither sent nor keyed: the key is the one older caches hold.
    cold = {**chat, "temperature": 0.0}
    LitellmChatModel(**cold, seed=1).complete(MESSAGES)
    assert LitellmChatModel(**cold, seed=2).complete(MESSAGES).cached
    assert "seed" not in openai_server.bodies("/v1/chat/completions")[-1] and len(openai_server.requests) == 4
    params = {"temperature": 0.0, "max_tokens": 512}
    key = request_key({"model": "openai/m", "api_base": openai_server.base_url, "messages": MESSAGES, "params": params})
    assert (tmp_path / key[:2] / f"{key}.json").is_file()


def test_a_seed_sweep_above_temperature_0_asks_once_per_seed(
    openai_server: OpenAIServer, run_at_server: Callable[..., tuple[int, str]]
) -> None:
    """The run's seed reaches the model (`llm.seed: ${seed}`); the data stays the same (`dataset.seed=0`)."""
    asked = []
    for n, (seed, temperature) in enumerate([(1, 0.7), (2, 0.7), (1, 0.7), (1, 0.0), (2, 0.0)]):
        status, stderr = run_at_server(
            *TOOLS, "dataset.seed=0", f"seed={seed}", f"llm.temperature={temperature}", f"output_dir=run{n}"
        )
        assert status == 0, stderr
        asked.append([b.get("seed") for b in openai_server.bodies("/v1/chat/completions")[sum(map(len, asked)) :]])
    first, second, again, cold, cold_again = asked
    assert first and set(first) == {1} and second == [2] * len(first)
    assert again == [] and cold == [None] * len(first) and cold_again == []


def test_a_reply_cut_off_at_its_budget_is_returned_counted_and_not_cached(
    openai_server: OpenAIServer, tmp_path: Path
) -> None:
    """The defect: finish_reason was never read, so a cut reply was taken, cached and counted nowhere."""
    openai_server.replies = [text_reply("Ann moved to Oslo in", finish_reason="length")]
    chat = {"model": "openai/m", "api_base": openai_server.base_url, "api_key": "sk-test", "cache_dir": str(tmp_path)}
    with recording() as events:
        cut = LitellmChatModel(**chat).complete(MESSAGES, task=TASK_CONTEXT_SUMMARY, max_tokens=5)
        whole = LitellmChatModel(**chat).complete(MESSAGES, task=TASK_CONTEXT_SUMMARY, max_tokens=5)
    assert (cut.text, cut.truncated, whole.truncated, whole.cached) == ("Ann moved to Oslo in", True, False, False)
    assert [e.data["truncated"] for e in events] == [True, False] and event_metrics(events)["llm.truncated"] == 1
    assert LitellmChatModel(**chat).complete(MESSAGES, task=TASK_CONTEXT_SUMMARY, max_tokens=5).cached  # the whole one
    assert len(openai_server.requests) == 2


def test_a_run_counts_the_replies_cut_off(
    openai_server: OpenAIServer, run_at_server: Callable[..., tuple[int, str]], tmp_path: Path
) -> None:
    """A summary cut off is still the summary (no fallback), counted in metrics.json."""
    openai_server.replies = [text_reply("Ann: I moved to", finish_reason="length")]  # the first summary's
    status, stderr = run_at_server("context=summarize", "context.threshold=4", "output_dir=run")
    assert status == 0, stderr
    metrics = json.loads((tmp_path / "run" / "metrics.json").read_text())
    assert metrics["llm.truncated"] == 1 and metrics["llm.calls"] > 1
    # The cut summary was used; the server's other replies (the prompt reversed) are longer than their source.
    assert metrics["llm.fallbacks"] == metrics["llm.calls"] - 1
