"""The litellm backends' settings, from Python and from a run's config, against the local OpenAI-compatible server."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from openai_server import EMBEDDING_DIM, OpenAIServer

from memlab.embed import LitellmEmbedder
from memlab.errors import MemlabError
from memlab.llm import LitellmChatModel


def litellm_at(server: OpenAIServer, cache: Path) -> list[str]:
    """Overrides that send the run's model calls and embeddings to `server` (key: $MEMLAB_TEST_KEY), no retries."""
    return [
        "llm=litellm", "llm.model=openai/gpt-4o-mini", f"llm.api_base={server.base_url}",
        "llm.api_key_env=MEMLAB_TEST_KEY", "llm.num_retries=0", f"llm.cache_dir={cache / 'llm'}",
        "embedder=litellm", "embedder.model=openai/test-embedding", f"embedder.dim={EMBEDDING_DIM}",
        f"embedder.api_base={server.base_url}", "embedder.api_key_env=MEMLAB_TEST_KEY", "embedder.num_retries=0",
        f"embedder.cache_dir={cache / 'embed'}",
    ]  # fmt: skip


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
    openai_server: OpenAIServer,
    memlab_run_err: Callable[..., tuple[int, str]],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    override: str,
    said: str,
) -> None:
    """The defect: litellm got api_key (timeout) twice, a 94-line traceback ending in TypeError at the first call."""
    monkeypatch.setenv("MEMLAB_TEST_KEY", "sk-test")
    run = tmp_path / "run"
    status, stderr = memlab_run_err(
        "debug=default", "longterm=chat", "policy=model", *litellm_at(openai_server, tmp_path / "cache"), override,
        f"output_dir={run}",
    )  # fmt: skip
    assert (status, stderr) == (2, f"memlab: error: {said}\n")
    assert openai_server.requests == [] and not run.exists()


def test_an_extra_param_memlab_passes_itself_is_refused_when_built(openai_server: OpenAIServer) -> None:
    with pytest.raises(MemlabError, match=r"^llm\.extra_params\.max_retries: .* set llm\.num_retries") as info:
        LitellmChatModel("openai/m", api_base=openai_server.base_url, extra_params={"top_p": 1, "max_retries": 9})
    assert "9" not in str(info.value)
    with pytest.raises(MemlabError, match=r"^embedder\.extra_params\.base_url: .*; set embedder\.api_base$"):
        LitellmEmbedder("openai/e", api_base=openai_server.base_url, extra_params={"base_url": "http://elsewhere"})
