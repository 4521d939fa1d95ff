"""The offline default embedder: character n-grams hashed straight into `dim` signed buckets.

No fitting and no download: scikit-learn's `HashingVectorizer` maps each word-bounded character
3- to 5-gram to one of `dim` dimensions with a hash-chosen sign (a count sketch), so cosine
similarity approximates the n-gram overlap of two texts. Deterministic across runs and machines;
lexical rather than semantic, which docs/backends.md states with its measured retrieval figures.
Character n-grams alone beat word n-grams here, and hashing straight into `dim` beats projecting
a large hashed space at random (whose sparse projection drops most features at 384 dimensions).
"""

from __future__ import annotations

import numpy as np

from memlab.embed.base import CachedEmbedder

# First design document, semantic retrieval: "将用户消息转为 768/1536 维向量".
DEFAULT_DIM = 768
CHAR_NGRAMS = (3, 5)


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

    def shared_scope(self) -> tuple[str, int]:
        """A row depends on its text and `dim` alone (hashed n-grams, normalized per row): shared in the process."""
        return self.name, self.dim

    def _embed(self, texts: list[str]) -> np.ndarray:
        return self._vectorizer.transform(texts).toarray().astype(np.float32)
