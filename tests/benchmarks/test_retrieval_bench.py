"""Top-10 search over 100,000 memories (dim 384): exact numpy vs faiss HNSW, and HNSW's recall.

The vectors are random unit vectors with the low intrinsic dimension real sentence embeddings
have (a random 16-dimensional subspace plus isotropic noise). On vectors uniform over the whole
384-dimensional sphere every point is about equally far from every other, so no ANN index
finds "the" nearest ten (HNSW recall@10 is about 0.3 there; docs/longterm.md).
Times come from pytest-benchmark (``--benchmark-enable``); the recall is asserted.
"""

from __future__ import annotations

import numpy as np
import pytest

from memlab.longterm import ExactIndex, HnswIndex, IndexSpec

N, DIM, LATENT, QUERIES, K = 100_000, 384, 16, 200, 10
HNSW_RECALL_FLOOR = 0.95  # the aim for HNSW against exact search

pytestmark = pytest.mark.slow  # building HNSW over 100,000 vectors takes a while on two cores


def _vectors(rng: np.random.Generator, basis: np.ndarray, n: int) -> np.ndarray:
    v = rng.standard_normal((n, LATENT)) @ basis.T + 0.05 * rng.standard_normal((n, DIM)) / np.sqrt(DIM / LATENT)
    return (v / np.linalg.norm(v, axis=1, keepdims=True)).astype(np.float32)


@pytest.fixture(scope="module")
def corpus() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    basis = np.linalg.qr(rng.standard_normal((DIM, LATENT)))[0]
    return _vectors(rng, basis, N), _vectors(rng, basis, QUERIES)


@pytest.fixture(scope="module")
def exact(corpus) -> ExactIndex:
    index = ExactIndex()
    index.build(corpus[0], [])
    return index


@pytest.fixture(scope="module")
def hnsw(corpus) -> HnswIndex:
    spec = IndexSpec(kind="hnsw")
    index = HnswIndex(spec.hnsw_m, spec.ef_construction, spec.ef_search)
    index.build(corpus[0], [])
    return index


PRIOR = np.ones(N)


def _search_all(index, queries: np.ndarray) -> list[list[int]]:
    return [[pos for pos, _, _ in index.search(q, "", K, PRIOR)] for q in queries]


def test_exact_top10(benchmark, exact, corpus) -> None:
    queries = corpus[1]
    result = benchmark(lambda: exact.search(queries[0], "", K, PRIOR))
    assert len(result) == K
    sims = corpus[0] @ queries[0]
    assert [p for p, _, _ in result] == list(np.argsort(-sims, kind="stable")[:K])


def test_hnsw_top10(benchmark, hnsw, corpus) -> None:
    result = benchmark(lambda: hnsw.search(corpus[1][0], "", K, PRIOR))
    assert len(result) == K


def test_hnsw_recall_against_exact(hnsw, exact, corpus) -> None:
    truth, found = _search_all(exact, corpus[1]), _search_all(hnsw, corpus[1])
    recall = np.mean([len(set(t) & set(f)) / K for t, f in zip(truth, found, strict=True)])
    assert recall >= HNSW_RECALL_FLOOR
