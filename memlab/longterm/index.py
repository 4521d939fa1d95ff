"""Search indexes over one namespace's memories, rebuilt from the store whenever it changed.

Three kinds, chosen by `IndexSpec.kind`:

- ``exact``: cosine similarity against every vector with numpy (the default; exact, and fast
  enough for the few hundred memories a user has);
- ``hnsw``: faiss ``IndexHNSWFlat`` on inner products, the design document's ANN index, for
  large stores (approximate; its recall against ``exact`` is a benchmark);
- ``hybrid``: BM25 (rank-bm25) over `search_terms` fused with the dense ranking by weighted
  reciprocal-rank fusion, ``sum_i w_i / (rrf_k + rank_i)``, scaled to (0, 1].

`search` returns ``(position, similarity)`` pairs, best first; the service multiplies each
similarity by its memory's type weight and decay.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from memlab.longterm.text import search_terms

INDEX_KINDS = ("exact", "hnsw", "hybrid")
RRF_K = 60  # the constant of Cormack et al.'s reciprocal-rank fusion


@dataclass
class IndexSpec:
    """Which index and its parameters (`longterm.index` in the config)."""

    kind: str = "exact"
    hnsw_m: int = 32
    ef_construction: int = 80
    ef_search: int = 128
    bm25_weight: float = 1.0
    dense_weight: float = 1.0
    rrf_k: int = RRF_K
    bm25_k1: float = 1.2
    bm25_b: float = 0.75


class MemoryIndex(Protocol):
    """Vectors (and texts) of one namespace, searchable by a query vector (and its text)."""

    exhaustive: bool  # True when `search` scores every entry, so re-weighting the top k is exact

    def build(self, vectors: np.ndarray, texts: Sequence[str]) -> None: ...

    def search(self, query_vector: np.ndarray, query_text: str, k: int) -> list[tuple[int, float]]: ...

    def __len__(self) -> int: ...


def _top(scores: np.ndarray, k: int) -> list[tuple[int, float]]:
    """The k best positions, ties broken by position (stable, so runs are reproducible)."""
    k = min(k, scores.size)
    if k <= 0:
        return []
    order = np.lexsort((np.arange(scores.size), -scores))[:k]
    return [(int(i), float(scores[i])) for i in order]


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

    def search(self, query_vector: np.ndarray, query_text: str, k: int) -> list[tuple[int, float]]:
        return _top(self.scores(query_vector), k)

    def __len__(self) -> int:
        return int(self._vectors.shape[0])


class HnswIndex:
    """faiss `IndexHNSWFlat` with inner-product metric (cosine on unit vectors)."""

    exhaustive = False

    def __init__(self, m: int = 32, ef_construction: int = 80, ef_search: int = 128) -> None:
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

    def search(self, query_vector: np.ndarray, query_text: str, k: int) -> list[tuple[int, float]]:
        if self._index is None or k <= 0:
            return []
        k = min(k, self._size)
        index = self._index
        index.hnsw.efSearch = max(self.ef_search, k)  # type: ignore[attr-defined]
        q = np.ascontiguousarray(np.asarray(query_vector, dtype=np.float32).reshape(1, -1))
        sims, positions = index.search(q, k)  # type: ignore[attr-defined]
        return [(int(i), float(s)) for i, s in zip(positions[0], sims[0], strict=True) if i >= 0]

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
        k1: float = 1.2,
        b: float = 0.75,
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

    def fused(self, query_vector: np.ndarray, query_text: str) -> np.ndarray:
        n = len(self)
        fused = np.zeros(n, dtype=np.float64)
        if n == 0:
            return fused
        dense = self._dense.scores(query_vector)
        fused[[i for i, _ in _top(dense, n)]] += self.dense_weight / (self.rrf_k + 1 + np.arange(n))
        terms = search_terms(query_text)
        if self._bm25 is not None and terms:
            lexical = np.asarray(self._bm25.get_scores(terms))  # type: ignore[attr-defined]
            matched = [i for i, s in _top(lexical, n) if s > 0]
            fused[matched] += self.bm25_weight / (self.rrf_k + 1 + np.arange(len(matched)))
        return fused / ((self.bm25_weight + self.dense_weight) / (self.rrf_k + 1))

    def search(self, query_vector: np.ndarray, query_text: str, k: int) -> list[tuple[int, float]]:
        return _top(self.fused(query_vector, query_text), k)

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
