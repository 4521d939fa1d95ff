"""The offline default embedder: scikit-learn's hashed character n-grams to the bit, unit-length float32 rows,
deterministic, cached (retrieval quality: tests/eval)."""

from __future__ import annotations

import itertools

import mmh3
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.feature_extraction.text import HashingVectorizer

from memlab.embed import HashingEmbedder, l2_normalize
from memlab.embed.hashing import CHAR_NGRAMS
from memlab.trace import EMBED_CALL, recording


def _scikit_learns(texts: list[str], dim: int) -> np.ndarray:
    """The rows `HashingEmbedder` reproduces: scikit-learn's `HashingVectorizer` with the embedder's settings."""
    vectorizer = HashingVectorizer(
        n_features=dim, analyzer="char_wb", ngram_range=CHAR_NGRAMS, alternate_sign=True, norm="l2"
    )
    return vectorizer.transform(texts).toarray().astype(np.float32)


def test_rows_are_scikit_learns_on_the_corpora(corpus_texts: list[str]) -> None:
    """Every distinct message of both corpora (LoCoMo's chat, tau-bench's tool calls and JSON), bit for bit."""
    assert len(corpus_texts) > 5000
    assert HashingEmbedder()._embed(corpus_texts).tobytes() == _scikit_learns(corpus_texts, 768).tobytes()


# Words, runs of white space of several kinds, case that lowercases to other lengths, scripts without spaces.
_TEXT = st.lists(
    st.sampled_from(["a", "ab", "abc", "Hello", "İstanbul", "STRASSE", "ß", "東京", "😀", "x.y", "3.5", "--"])
    | st.sampled_from([" ", "  ", "\n", "\t\t", "\u00a0", "\u2003", "\u3000"])
    | st.text(max_size=8),
    max_size=12,
).map("".join)


@settings(max_examples=200)
@given(st.lists(_TEXT, min_size=1, max_size=4), st.sampled_from([1, 2, 7, 384, 768]))
def test_rows_are_scikit_learns_on_any_text(texts: list[str], dim: int) -> None:
    assert HashingEmbedder(dim)._embed(texts).tobytes() == _scikit_learns(texts, dim).tobytes()


_MASK, _C1, _C2, _C3 = 0xFFFFFFFF, 0xCC9E2D51, 0x1B873593, 0xE6546B64  # MurmurHash3_x86_32's constants


def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (32 - r))) & _MASK


def _mix(k: int) -> int:
    return (_rotl((k * _C1) & _MASK, 15) * _C2) & _MASK


def _unmix(k: int) -> int:
    return (_rotl((k * pow(_C2, -1, 2**32)) & _MASK, 17) * pow(_C1, -1, 2**32)) & _MASK


def _block(h: int, k: int) -> int:
    return (_rotl(h ^ _mix(k), 13) * 5 + _C3) & _MASK


def _unshift(h: int, r: int) -> int:
    x = h
    for _ in range(32 // r + 1):
        x = h ^ (x >> r)
    return x & _MASK


def _unfinalize(h: int) -> int:
    h = (_unshift(h, 16) * pow(0xC2B2AE35, -1, 2**32)) & _MASK
    h = (_unshift(h, 13) * pow(0x85EBCA6B, -1, 2**32)) & _MASK
    return _unshift(h, 16)


def _gram_hashing_to(target: int) -> str:
    """Five CJK characters whose MurmurHash3 (seed 0) is `target`: their 15 UTF-8 bytes are three blocks and a
    three-byte tail; the hash is run backwards from `target` to the third block, the rest chosen until it decodes."""
    want = _unfinalize(target & _MASK) ^ 15  # the state before the length and the finalizer
    chars = [chr(c) for c in range(0x4E00, 0x4E40)]
    for a, b, second, e in itertools.product(chars, chars, range(0x80, 0xC0), chars):
        head, tail = (a + b).encode() + bytes([0xE4, second]), e.encode()
        h = _block(_block(0, int.from_bytes(head[:4], "little")), int.from_bytes(head[4:], "little"))
        before = (want ^ _mix(int.from_bytes(tail, "little"))) - _C3
        k = _unmix(_rotl((before * pow(5, -1, 2**32)) & _MASK, 19) ^ h)
        try:
            gram = (head + k.to_bytes(4, "little") + tail).decode()
        except UnicodeDecodeError:
            continue
        if len(gram) == 5 and not any(c.isspace() for c in gram):
            return gram
    raise AssertionError("no gram found")


def test_a_gram_hashing_to_the_least_int32_lands_in_scikit_learns_bucket() -> None:
    """-2**31, the one hash whose absolute value int32 cannot hold, which FeatureHasher buckets on its own."""
    gram = _gram_hashing_to(-(2**31))
    assert mmh3.hash(gram) == -(2**31)
    texts = [gram, f"it said {gram} twice: {gram}"]
    for dim in (1, 2, 3, 7, 384, 768, 1000):
        assert HashingEmbedder(dim)._embed(texts).tobytes() == _scikit_learns(texts, dim).tobytes(), dim


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
