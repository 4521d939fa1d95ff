"""Search indexes over one namespace's memories, rebuilt from the store whenever it changed.

Three kinds, chosen by `IndexSpec.kind`:

- ``exact``: cosine similarity against every vector with numpy (exact, and fast enough for
  the few hundred memories a user has);
- ``hnsw``: faiss ``IndexHNSWFlat`` on inner products, the design document's ANN index, for
  large stores (approximate; its recall against ``exact`` is a benchmark);
- ``hybrid``: BM25 (rank-bm25) over `search_terms` fused with the dense ranking by weighted
  reciprocal-rank fusion, ``sum_i w_i / (rrf_k + rank_i)``, scaled to (0, 1] (the default,
  see `IndexSpec`).

`search` takes a `prior` per memory (the service passes type weight x decay) and ranks by
similarity x prior; the hybrid applies the prior inside each ranking before fusing them, so
that the flat top of a fused score does not let the prior swamp the query. It returns
``(position, score, similarity)`` triples, best first.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from memlab import ranges
from memlab.longterm.text import search_terms

INDEX_KINDS = ("exact", "hnsw", "hybrid")
RRF_K = 60  # the constant of Cormack et al.'s reciprocal-rank fusion


@dataclass
class IndexSpec:
    """Which index and its parameters (`longterm.index` in the config).

    The default is ``hybrid``: with the offline hashing embedder (lexical, not semantic) the
    BM25 side carries retrieval, and the dense ranking only breaks near-ties (`dense_weight`);
    raise `dense_weight` with a semantic embedder. BM25's k1 = 0.9, b = 0.4 are Anserini's
    defaults for short passages.
    """

    kind: str = "hybrid"
    hnsw_m: int = ranges.ranged(16, ge=2, le=1_024)
    ef_construction: int = ranges.ranged(64, ge=1)
    ef_search: int = ranges.ranged(64, ge=1)
    bm25_weight: float = ranges.ranged(1.0, ge=0)
    dense_weight: float = ranges.ranged(0.05, ge=0)
    rrf_k: int = ranges.count(RRF_K)
    bm25_k1: float = ranges.ranged(0.9, ge=0)
    bm25_b: float = ranges.rate(0.4)


class MemoryIndex(Protocol):
    """Vectors (and texts) of one namespace, searchable by a query vector (and its text)."""

    exhaustive: bool  # True when `search` scores every entry, so re-weighting the top k is exact

    def build(self, vectors: np.ndarray, texts: Sequence[str]) -> None: ...

    def search(self, query_vector: np.ndarray, query_text: str, k: int, prior: np.ndarray) -> list[Hit]: ...

    def __len__(self) -> int: ...


Hit = tuple[int, float, float]  # (position, score, similarity)


def _order(scores: np.ndarray, k: int) -> np.ndarray:
    """The k best positions, ties broken by position (stable, so runs are reproducible)."""
    k = min(k, scores.size)
    if k <= 0:
        return np.zeros(0, dtype=np.int64)
    if k < scores.size:  # partial selection first; keep every tie of the k-th score
        kth = np.partition(scores, scores.size - k)[scores.size - k]
        candidates = np.flatnonzero(scores >= kth)
    else:
        candidates = np.arange(scores.size)
    return candidates[np.lexsort((candidates, -scores[candidates]))][:k]


def _ranked(similarity: np.ndarray, prior: np.ndarray, k: int, positions: np.ndarray | None = None) -> list[Hit]:
    """Rank by max(similarity, 0) x prior; `positions` maps rows to memories (all of them when None)."""
    scores = np.maximum(similarity, 0.0) * prior
    at = np.arange(similarity.size) if positions is None else positions
    return [(int(at[i]), float(scores[i]), float(similarity[i])) for i in _order(scores, k)]


class ExactIndex:
    """Brute-force cosine similarity (rows are unit vectors, so a dot product)."""

    exhaustive = True

    def __init__(self) -> None:
        self._vectors = np.zeros((0, 0), dtype=np.float32)

    def build(self, vectors: np.ndarray, texts: Sequence[str]) -> None:
        self._vectors = np.ascontiguousarray(vectors, dtype=np.float32)

    def scores(self, query_vector: np.ndarray) -> np.ndarray:
        if len(self) == 0:
            return np.zeros(0, dtype=np.float32)
        return self._vectors @ np.asarray(query_vector, dtype=np.float32)

    def search(self, query_vector: np.ndarray, query_text: str, k: int, prior: np.ndarray) -> list[Hit]:
        return _ranked(self.scores(query_vector), np.asarray(prior, dtype=np.float64), k)

    def __len__(self) -> int:
        return int(self._vectors.shape[0])


class HnswIndex:
    """faiss `IndexHNSWFlat` with inner-product metric (cosine on unit vectors)."""

    exhaustive = False

    def __init__(self, m: int = 16, ef_construction: int = 64, ef_search: int = 64) -> None:
        self.m, self.ef_construction, self.ef_search = m, ef_construction, ef_search
        self._index: object | None = None
        self._size = 0

    def build(self, vectors: np.ndarray, texts: Sequence[str]) -> None:
        import faiss

        vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        self._size = int(vectors.shape[0])
        if self._size == 0:
            self._index = None
            return
        index = faiss.IndexHNSWFlat(int(vectors.shape[1]), self.m, faiss.METRIC_INNER_PRODUCT)
        index.hnsw.efConstruction = self.ef_construction
        index.add(vectors)
        self._index = index

    def nearest(self, query_vector: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """The approximate `k` nearest: (positions, cosine similarities), best first."""
        if self._index is None or k <= 0:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
        index = self._index
        index.hnsw.efSearch = max(self.ef_search, k)  # type: ignore[attr-defined]
        q = np.ascontiguousarray(np.asarray(query_vector, dtype=np.float32).reshape(1, -1))
        sims, positions = index.search(q, min(k, self._size))  # type: ignore[attr-defined]
        found = positions[0] >= 0
        return positions[0][found].astype(np.int64), sims[0][found]

    def search(self, query_vector: np.ndarray, query_text: str, k: int, prior: np.ndarray) -> list[Hit]:
        """Re-rank the approximate candidates (the service asks for several times k) by similarity x prior."""
        positions, sims = self.nearest(query_vector, k)
        return _ranked(sims.astype(np.float64), np.asarray(prior, dtype=np.float64)[positions], k, positions)

    def __len__(self) -> int:
        return self._size


class HybridIndex:
    """BM25 and dense rankings fused by weighted RRF; a memory with no query term gets no BM25 rank."""

    exhaustive = True

    def __init__(
        self,
        bm25_weight: float = 1.0,
        dense_weight: float = 1.0,
        rrf_k: int = RRF_K,
        k1: float = 0.9,
        b: float = 0.4,
    ) -> None:
        self.bm25_weight, self.dense_weight, self.rrf_k, self.k1, self.b = bm25_weight, dense_weight, rrf_k, k1, b
        self._dense = ExactIndex()
        self._bm25: object | None = None

    def build(self, vectors: np.ndarray, texts: Sequence[str]) -> None:
        from rank_bm25 import BM25Okapi

        self._dense.build(vectors, texts)
        corpus = [search_terms(t) for t in texts]
        # rank-bm25 divides by the mean document length, so an all-empty corpus gets no BM25 side.
        self._bm25 = BM25Okapi(corpus, k1=self.k1, b=self.b) if any(corpus) else None

    def fused(self, query_vector: np.ndarray, query_text: str, prior: np.ndarray) -> np.ndarray:
        """Weighted RRF of the dense and BM25 rankings (each by its score x prior), scaled to (0, 1]."""
        n = len(self)
        fused = np.zeros(n, dtype=np.float64)
        if n == 0:
            return fused
        prior = np.asarray(prior, dtype=np.float64)
        dense = np.maximum(self._dense.scores(query_vector), 0.0) * prior
        fused[_order(dense, n)] += self.dense_weight / (self.rrf_k + 1 + np.arange(n))
        terms = search_terms(query_text)
        if self._bm25 is not None and terms:
            lexical = np.asarray(self._bm25.get_scores(terms)) * prior  # type: ignore[attr-defined]
            matched = [i for i in _order(lexical, n) if lexical[i] > 0]
            fused[matched] += self.bm25_weight / (self.rrf_k + 1 + np.arange(len(matched)))
        return fused / ((self.bm25_weight + self.dense_weight) / (self.rrf_k + 1))

    def search(self, query_vector: np.ndarray, query_text: str, k: int, prior: np.ndarray) -> list[Hit]:
        fused = self.fused(query_vector, query_text, prior)
        dense = self._dense.scores(query_vector)
        return [(int(i), float(fused[i]), float(dense[i])) for i in _order(fused, k)]

    def __len__(self) -> int:
        return len(self._dense)


def make_index(spec: IndexSpec) -> MemoryIndex:
    """A new, empty index of `spec.kind`."""
    if spec.kind == "exact":
        return ExactIndex()
    if spec.kind == "hnsw":
        return HnswIndex(spec.hnsw_m, spec.ef_construction, spec.ef_search)
    if spec.kind == "hybrid":
        return HybridIndex(spec.bm25_weight, spec.dense_weight, spec.rrf_k, spec.bm25_k1, spec.bm25_b)
    raise ValueError(f"longterm.index.kind {spec.kind!r} is unknown; expected one of {', '.join(INDEX_KINDS)}")
