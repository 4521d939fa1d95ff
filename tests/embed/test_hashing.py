"""The offline default embedder: scikit-learn's hashed character n-grams to the bit, unit-length float32 rows,
deterministic, cached (retrieval quality: tests/eval)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.feature_extraction.text import HashingVectorizer

from memlab.dialogues import load_locomo, load_tau_bench
from memlab.embed import HashingEmbedder, l2_normalize
from memlab.embed.hashing import CHAR_NGRAMS
from memlab.trace import EMBED_CALL, recording


def _scikit_learns(texts: list[str], dim: int) -> np.ndarray:
    """The rows `HashingEmbedder` reproduces: scikit-learn's `HashingVectorizer` with the embedder's settings."""
    vectorizer = HashingVectorizer(
        n_features=dim, analyzer="char_wb", ngram_range=CHAR_NGRAMS, alternate_sign=True, norm="l2"
    )
    return vectorizer.transform(texts).toarray().astype(np.float32)


def test_rows_are_scikit_learns_on_the_corpora(locomo_path, tau_bench_path) -> None:
    """Every distinct message of both corpora (LoCoMo's chat, tau-bench's tool calls and JSON), bit for bit."""
    texts = [m.text for d in load_locomo(locomo_path) for s in d.sessions for m in s.messages]
    texts += [m.text for d in load_tau_bench(tau_bench_path) for s in d.sessions for m in s.messages]
    texts = list(dict.fromkeys(texts))
    assert len(texts) > 5000
    assert HashingEmbedder()._embed(texts).tobytes() == _scikit_learns(texts, 768).tobytes()


# Words, runs of white space of several kinds, case that lowercases to other lengths, scripts without spaces.
_TEXT = st.lists(
    st.sampled_from(["a", "ab", "abc", "Hello", "İstanbul", "STRASSE", "ß", "東京", "😀", "x.y", "3.5", "--"])
    | st.sampled_from([" ", "  ", "\n", "\t\t", "\u00a0", "\u2003", "\u3000"])
    | st.text(max_size=8),
    max_size=12,
).map("".join)


@settings(max_examples=200, deadline=None)
@given(st.lists(_TEXT, min_size=1, max_size=4), st.sampled_from([1, 2, 7, 384, 768]))
def test_rows_are_scikit_learns_on_any_text(texts: list[str], dim: int) -> None:
    assert HashingEmbedder(dim)._embed(texts).tobytes() == _scikit_learns(texts, dim).tobytes()


def test_rows_are_unit_float32_and_deterministic_across_instances() -> None:
    texts = ["I moved to Oslo in 2021.", "我喜欢喝茶", "!!!", ""]
    a, b = HashingEmbedder().embed(texts), HashingEmbedder().embed(texts)
    assert a.dtype == np.float32 and a.shape == (4, 768)
    np.testing.assert_array_equal(a, b)
    np.testing.assert_allclose(np.linalg.norm(a[:3], axis=1), 1.0, rtol=1e-6)
    assert not a[3].any()  # nothing to hash: the zero vector, not NaN
    assert HashingEmbedder().embed([]).shape == (0, 768)


def test_similar_wording_is_closer_than_unrelated_text() -> None:
    q, near, far = HashingEmbedder(dim=384).embed(
        ["When did Caroline go to the LGBTQ support group?", "I went to a LGBTQ support group yesterday", "Pottery!"]
    )
    assert q @ near > 0.3 > q @ far


def test_each_distinct_text_is_embedded_once() -> None:
    embedder = HashingEmbedder()
    with recording() as events:
        first = embedder.embed(["a b c", "d e f", "a b c"])
        embedder.embed(["d e f", "g h i"])
    assert [e.data["texts"] for e in events if e.kind == EMBED_CALL] == [2, 1]
    np.testing.assert_array_equal(first[0], first[2])


def test_a_bad_dim_is_rejected() -> None:
    with pytest.raises(ValueError, match="dim"):
        HashingEmbedder(dim=0)


def test_rows_shared_between_instances_are_each_texts_own(monkeypatch: pytest.MonkeyPatch) -> None:
    """Rows hashed by another instance, in other batches, or after the shared rows were cleared are the ones
    scikit-learn's vectorizer gives each text alone; each instance still reports the texts it had not embedded."""
    from memlab.embed import base

    monkeypatch.setattr(base, "_SHARED", {})
    monkeypatch.setattr(base, "SHARED_ROWS", 3)  # the second and third batches below clear them
    texts = ["I moved to Oslo in 2021.", "我喜欢喝茶", "Caroline's dog", "the dog", "Oslo", "tea"]
    alone = np.concatenate([_scikit_learns([t], 64) for t in texts])
    first, second = HashingEmbedder(dim=64), HashingEmbedder(dim=64)
    hashed: list[list[str]] = []
    own = HashingEmbedder._embed
    monkeypatch.setattr(HashingEmbedder, "_embed", lambda self, batch: hashed.append(batch) or own(self, batch))
    with recording() as events:
        first.embed(texts[:3])
        rows = np.concatenate([second.embed(texts[1:4]), second.embed(texts[3:]), second.embed(texts[:1])])
    np.testing.assert_array_equal(rows, l2_normalize(alone[[1, 2, 3, 3, 4, 5, 0]].astype(np.float32)))
    assert [e.data["texts"] for e in events if e.kind == EMBED_CALL] == [3, 3, 2, 1]
    # the second instance took texts 1 and 2 from the first's rows; text 0 was hashed again after a clear
    assert hashed == [texts[:3], texts[3:4], texts[4:], texts[:1]]
