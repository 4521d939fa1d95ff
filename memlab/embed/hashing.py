"""The offline default embedder: character n-grams hashed straight into `dim` signed buckets.

No fitting and no download: scikit-learn's `HashingVectorizer` maps each word-bounded character
3- to 5-gram to one of `dim` dimensions with a hash-chosen sign (a count sketch), so cosine
similarity approximates the n-gram overlap of two texts. Deterministic across runs and machines;
lexical rather than semantic, which docs/backends.md states with its measured retrieval figures.
Character n-grams alone beat word n-grams here, and hashing straight into `dim` beats projecting
a large hashed space at random (whose sparse projection drops most features at 384 dimensions).
"""

from __future__ import annotations

import threading

import numpy as np

from memlab.embed.base import CachedEmbedder

# First design document, semantic retrieval: "将用户消息转为 768/1536 维向量".
DEFAULT_DIM = 768
CHAR_NGRAMS = (3, 5)
# Rows by (dim, text), shared by every instance of a process: each row depends on its text alone (hashed n-grams,
# normalized per row), and the runs of a sweep or a test's variants embed the same texts. Cleared when full: at 768
# dimensions 8,192 rows are 24 MiB, kept beside each instance's own cache (docs/speed.md: a dev7 run's peak).
SHARED_ROWS = 1 << 13
_ROWS: dict[tuple[int, str], np.ndarray] = {}
_ROWS_LOCK = threading.Lock()  # a background extraction thread may embed beside the replay's


class HashingEmbedder(CachedEmbedder):
    """Word-bounded character 3-5-grams, hashed with signs into `dim` dimensions, L2-normalized.

    Parameters: the fields of `memlab.embed.schemas.HashingConfig`, each documented there once.
    """

    name = "hashing"

    def __init__(self, dim: int = DEFAULT_DIM) -> None:
        super().__init__()
        if dim < 1:
            raise ValueError(f"embedder dim must be positive, got {dim}")
        self.dim = dim
        from sklearn.feature_extraction.text import HashingVectorizer  # imported on use: it takes a second

        self._vectorizer = HashingVectorizer(
            n_features=dim, analyzer="char_wb", ngram_range=CHAR_NGRAMS, alternate_sign=True, norm="l2"
        )

    def _embed(self, texts: list[str]) -> np.ndarray:
        """The texts' rows, those no instance of this process has hashed yet hashed now (`_ROWS`)."""
        with _ROWS_LOCK:
            new = [t for t in dict.fromkeys(texts) if (self.dim, t) not in _ROWS]
            if new and len(_ROWS) + len(new) > SHARED_ROWS:
                _ROWS.clear()
                new = list(dict.fromkeys(texts))
            if new:
                rows = self._vectorizer.transform(new).toarray().astype(np.float32)
                _ROWS.update(((self.dim, t), row) for t, row in zip(new, rows, strict=True))
            return np.stack([_ROWS[(self.dim, t)] for t in texts])
