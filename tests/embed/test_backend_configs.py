"""Every conf/embedder and conf/llm entry composes, validates and instantiates."""

from __future__ import annotations

import pytest
from hydra.errors import ConfigCompositionException
from hydra.utils import instantiate

from memlab.embed import Embedder, HashingEmbedder, LitellmEmbedder
from memlab.llm import ChatModel, ExtractiveChatModel, FaultyChatModel, LitellmChatModel


@pytest.mark.parametrize(
    ("entry", "cls"),
    [
        ("hashing", HashingEmbedder),
        ("litellm", LitellmEmbedder),
    ],
)
def test_embedder_entries_instantiate(make_config, entry: str, cls: type) -> None:
    embedder = instantiate(make_config(f"embedder={entry}").embedder)
    assert isinstance(embedder, Embedder) and isinstance(embedder, cls)


def test_the_minilm_entry_composes(make_config) -> None:
    """Instantiated in tests/embed/test_minilm.py when the extra is installed."""
    node = make_config("embedder=minilm", "embedder.batch_size=8").embedder
    assert (node._target_, node.device, node.batch_size) == ("memlab.embed.MiniLMEmbedder", "cpu", 8)


@pytest.mark.parametrize(
    ("entry", "cls"), [("extractive", ExtractiveChatModel), ("litellm", LitellmChatModel), ("faulty", FaultyChatModel)]
)
def test_llm_entries_instantiate(make_config, entry: str, cls: type) -> None:
    model = instantiate(make_config(f"llm={entry}", "tokenizer=estimate").llm)
    assert isinstance(model, ChatModel) and isinstance(model, cls)


def test_the_default_is_offline(make_config) -> None:
    cfg = make_config()
    assert isinstance(instantiate(cfg.llm), ExtractiveChatModel)
    assert isinstance(instantiate(cfg.embedder), HashingEmbedder)


def test_litellm_settings_come_from_config_and_the_cache_from_memlab_cache(make_config, monkeypatch, tmp_path) -> None:
    monkeypatch.setenv("MEMLAB_CACHE", str(tmp_path))
    model = instantiate(make_config("llm=litellm", "llm.model=ollama/llama3", "llm.temperature=0.7").llm)
    assert (model.model, model.temperature) == ("ollama/llama3", 0.7)
    assert model.cache.folder == tmp_path / "llm"


def test_an_unknown_key_fails_at_composition(make_config) -> None:
    with pytest.raises(ConfigCompositionException):
        make_config("llm=litellm", "llm.temprature=0.7")
