"""The embedder and llm entries' settings (every entry builds and answers: tests/test_contracts.py)."""

from __future__ import annotations

import pytest
from hydra.errors import ConfigCompositionException
from hydra.utils import instantiate

from memlab.embed import HashingEmbedder
from memlab.llm import ExtractiveChatModel


def test_the_minilm_entry_composes(make_config) -> None:
    """Instantiated in tests/embed/test_minilm.py when the extra is installed."""
    node = make_config("embedder=minilm", "embedder.batch_size=8").embedder
    assert (node._target_, node.device, node.batch_size) == ("memlab.embed.MiniLMEmbedder", "cpu", 8)


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
