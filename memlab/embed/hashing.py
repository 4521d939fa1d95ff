"""The offline default embedder: hashed word and character n-grams, projected to a dense space.

No fitting and no download: scikit-learn's `HashingVectorizer` maps text to sparse features,
a seeded sparse random projection maps those to `dim` dense dimensions. Deterministic across
runs and machines; lexical rather than semantic, which the README states.
"""

from __future__ import annotations

import numpy as np
from scipy import sparse
from sklearn.feature_extraction.text import HashingVectorizer
from sklearn.random_projection import SparseRandomProjection

from memlab.embed.base import CachedEmbedder

N_FEATURES = 2**18


class HashingEmbedder(CachedEmbedder):
    """Word unigrams+bigrams and character 3-5-grams, hashed, tf-scaled, projected to `dim`."""

    name = "hashing"

    def __init__(self, dim: int = 384, seed: int = 0) -> None:
        super().__init__()
        self.dim = dim
        self._words = HashingVectorizer(
            n_features=N_FEATURES, ngram_range=(1, 2), alternate_sign=False, norm="l2", stop_words="english"
        )
        self._chars = HashingVectorizer(
            n_features=N_FEATURES, analyzer="char_wb", ngram_range=(3, 5), alternate_sign=False, norm="l2"
        )
        self._projection = SparseRandomProjection(n_components=dim, random_state=seed, dense_output=True)
        self._projection.fit(sparse.csr_matrix((1, 2 * N_FEATURES)))

    def _embed(self, texts: list[str]) -> np.ndarray:
        features = sparse.hstack([self._words.transform(texts), 0.5 * self._chars.transform(texts)]).tocsr()
        return np.asarray(self._projection.transform(features), dtype=np.float32)
