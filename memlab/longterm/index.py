"""Search indexes over one namespace's memories, updated in place as memories come and go.

Three kinds, chosen by `IndexSpec.kind`:

- ``exact``: cosine similarity against every vector (numpy);
- ``hnsw``: faiss ``IndexHNSWFlat`` on inner products, the design document's ANN index
  (approximate; its recall against ``exact`` is a test);
- ``hybrid`` (the default): BM25 over `search_terms` (an inverted index, `Bm25Index`) fused
  linearly with the dense cosine; the dense side is exact below `IndexSpec.ann_min_items`
  memories and HNSW above.

Every index returns a *relevance* in [0, 1], so that ``(relevance: 0.62)`` in the injected block
means the same thing whatever the index: the clipped cosine for the dense kinds; for the hybrid,
``(w_bm25 * bm25 / bound + w_dense * max(cos, 0)) / (w_bm25 + w_dense)``, where ``bound`` is the
highest BM25 score the query could reach (each term's idf times ``k1 + 1``, the limit of BM25's
saturating term frequency), so ``bm25 / bound`` is the share of the query's attainable BM25 score.
Beyond the document (which fixes only "similarity"): the linear fusion and its weights (the dense
weight chosen on LoCoMo dev7 is set in `longterm=locomo`; docs/longterm.md, experiments/longterm_baselines.py
--loco checks it conversation by conversation). The hybrid also searches with weighted query terms
(`search(..., terms=...)`), which is how the `feedback` stage (pseudo-relevance feedback) asks again with an
expanded query; it and the rules after it are stages of `memlab.longterm.rerank`.

Updates are incremental: `add` appends memories at the next positions and `remove` retires
positions (masked; the HNSW graph is rebuilt from the live vectors once a quarter of it is dead),
so a save never rebuilds an index. Search returns ``(position, relevance, similarity)``, best first.
"""

from __future__ import annotations

import contextlib
import functools
import math
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from memlab import ranges
from memlab.errors import MemlabError
from memlab.text import search_terms

INDEX_KINDS = ("exact", "hnsw", "hybrid")
HNSW_COMPACT_SHARE = 0.25  # rebuild the HNSW graph from live vectors once this share of it is retired
HYBRID_CANDIDATES = 200  # with an HNSW dense side, each side's top this many are fused


@dataclass
class IndexSpec:
    """Which index and its parameters (`longterm.index` in the config).

    BM25's k1 = 0.9, b = 0.4 are Anserini's defaults for short passages. `dense_weight` 0.1 was chosen on
    LoCoMo dev7 with the offline hashing embedder (docs/longterm.md; `experiments/longterm_baselines.py --loco`
    holds each conversation out). Raise it with a semantic embedder. Pseudo-relevance feedback is no index
    knob: it is the re-ranking stage `feedback` (`longterm.stages.feedback`).
    """

    kind: str = "hybrid"
    """exact (cosine against every vector), hnsw (faiss HNSW) or hybrid (BM25 fused with the cosine)."""
    hnsw_m: int = ranges.ranged(16, ge=2, le=1_024)
    """HNSW: links per node."""
    ef_construction: int = ranges.ranged(64, ge=1)
    """HNSW: candidates kept while building."""
    ef_search: int = ranges.ranged(64, ge=1)
    """HNSW: candidates kept while searching."""
    ann_min_items: int = ranges.ranged(20_000, ge=1)
    """hybrid: the dense side is exact below this many memories, HNSW above."""
    bm25_weight: float = ranges.ranged(1.0, ge=0)
    """hybrid: the weight of the BM25 share in the fused relevance."""
    dense_weight: float = ranges.ranged(0.1, ge=0)
    """hybrid: the weight of the cosine in the fused relevance."""
    bm25_k1: float = ranges.ranged(0.9, ge=0)
    """BM25 term-frequency saturation (Anserini's short-passage default)."""
    bm25_b: float = ranges.rate(0.4)
    """BM25 length normalization (Anserini's short-passage default)."""
    context_weight: float = ranges.ranged(1.0, ge=0)
    """hybrid: the weight of a memory's context (the turn said before it) as a BM25 field (1: as its own text)."""

    def __post_init__(self) -> None:
        if self.kind not in INDEX_KINDS:
            raise MemlabError(f"longterm.index.kind: {self.kind!r}; expected one of {', '.join(INDEX_KINDS)}")
        if self.kind == "hybrid" and self.bm25_weight + self.dense_weight <= 0:  # the fused relevance divides by it
            raise MemlabError(
                "longterm.index: bm25_weight and dense_weight are both 0; the hybrid index needs a weight above 0"
            )


Hit = tuple[int, float, float]  # (position, relevance, similarity)


class MemoryIndex(Protocol):
    """Vectors and texts of one namespace by position, searchable by a query vector and its text."""

    def add(self, vectors: np.ndarray, texts: Sequence[str], contexts: Sequence[str] = ()) -> None: ...

    def remove(self, positions: Sequence[int]) -> None: ...

    def search(self, query_vector: np.ndarray, query_text: str, k: int) -> list[Hit]: ...

    def __len__(self) -> int: ...


def top_positions(scores: np.ndarray, k: int) -> np.ndarray:
    """The k best positions, ties broken by position (stable, so runs are reproducible)."""
    k = min(k, scores.size)
    if k <= 0:
        return np.zeros(0, dtype=np.int64)
    if k < scores.size:  # partial selection first; of the ties at the k-th score, the first positions
        kth = np.partition(scores, scores.size - k)[scores.size - k]
        above = np.flatnonzero(scores > kth)
        candidates = np.concatenate([above, np.flatnonzero(scores == kth)[: k - above.size]])
    else:
        candidates = np.arange(scores.size)
    return candidates[np.lexsort((candidates, -scores[candidates]))][:k]


@functools.cache
def _blas() -> object:
    from threadpoolctl import ThreadpoolController  # imported on first use

    return ThreadpoolController().select(user_api="blas")


@contextlib.contextmanager
def one_blas_thread() -> Iterator[None]:
    """numpy's BLAS on one thread for one query's products: an 800 x 768 product against one vector takes
    0.2 ms of CPU on one thread and 3.6 ms on two (OpenBLAS wakes its team, which then spins), on a shared
    machine a tenth of a dev7 long-term run; the results are the same (each output is one thread's dot product).
    """
    with _blas().limit(limits=1):  # type: ignore[attr-defined]
        yield


def cosines(rows: np.ndarray, queries: np.ndarray) -> np.ndarray:
    """``queries @ rows.T`` (one query: a vector of `rows`' cosines), in float64, rounded to float32 once.

    The same bits on every CPU: a float32 BLAS product's last bits follow the kernel the machine picks
    (OpenBLAS's SSE3 kernel ranked two near-tied memories the other way round from its AVX ones). `rows` are
    float64 (`_Rows`) holding float32 vectors, so every product is exact and kernels differ only in the order of
    float64 sums, about 1e-16 apart: rounded to float32 they agree but at odds of about 1e-9 per value.
    """
    queries = np.asarray(queries, dtype=np.float32).astype(np.float64)  # the float32 vector a query embeds to
    with one_blas_thread():
        return (queries @ rows.T).astype(np.float32)


class _Rows:
    """A growable matrix of float32 vectors (capacity doubles), with a live mask per row.

    Held as float64 (twice the memory) so that `cosines` multiplies them exactly with float64 BLAS.
    """

    def __init__(self) -> None:
        self._data = np.zeros((0, 0), dtype=np.float64)
        self.alive = np.zeros(0, dtype=bool)
        self.size = 0

    def add(self, vectors: np.ndarray) -> None:
        vectors = np.asarray(vectors, dtype=np.float32).reshape(len(vectors), -1)
        need = self.size + len(vectors)
        if need > self._data.shape[0] or (self.size == 0 and self._data.shape[1] != vectors.shape[1]):
            grown = np.zeros((max(need, 2 * self._data.shape[0], 16), vectors.shape[1]), dtype=np.float64)
            if self.size:
                grown[: self.size] = self._data[: self.size]
            alive = np.zeros(grown.shape[0], dtype=bool)
            alive[: self.size] = self.alive[: self.size]
            self._data, self.alive = grown, alive
        self._data[self.size : need] = vectors
        self.alive[self.size : need] = True
        self.size = need

    @property
    def matrix(self) -> np.ndarray:
        return self._data[: self.size]

    def live(self) -> np.ndarray:
        return self.alive[: self.size]


class ExactIndex:
    """Brute-force cosine similarity (rows are unit vectors, so a dot product)."""

    def __init__(self) -> None:
        self.rows = _Rows()

    def add(self, vectors: np.ndarray, texts: Sequence[str], contexts: Sequence[str] = ()) -> None:
        self.rows.add(vectors)

    def remove(self, positions: Sequence[int]) -> None:
        self.rows.alive[list(positions)] = False

    def similarities(self, query_vector: np.ndarray) -> np.ndarray:
        """Cosine of every position (retired ones -inf)."""
        if self.rows.size == 0:
            return np.zeros(0, dtype=np.float32)
        sims = cosines(self.rows.matrix, query_vector)
        return np.where(self.rows.live(), sims, -np.inf)

    def search(self, query_vector: np.ndarray, query_text: str, k: int) -> list[Hit]:
        sims = self.similarities(query_vector)
        k = min(k, len(self))
        return [(int(i), max(float(sims[i]), 0.0), float(sims[i])) for i in top_positions(sims, k)]

    def __len__(self) -> int:
        return int(self.rows.live().sum())


class HnswIndex:
    """faiss `IndexHNSWFlat` with inner-product metric (cosine on unit vectors), added to in place.

    faiss cannot delete from an HNSW graph: retired positions are skipped at search time and
    the graph is rebuilt from the live vectors once `HNSW_COMPACT_SHARE` of it is retired.

    Args:
        m: Neighbours per graph node (`IndexSpec.hnsw_m`): more is more accurate and larger.
        ef_construction: Candidates kept while building: more is a better graph, built slower.
        ef_search: Candidates kept while searching: more is better recall, searched slower.
    """

    def __init__(self, m: int = 16, ef_construction: int = 64, ef_search: int = 64) -> None:
        self.m, self.ef_construction, self.ef_search = m, ef_construction, ef_search
        self.rows = _Rows()
        self._index: object | None = None
        self._labels = np.zeros(0, dtype=np.int64)  # graph row -> position

    def _graph(self, dim: int) -> object:
        import faiss

        index = faiss.IndexHNSWFlat(dim, self.m, faiss.METRIC_INNER_PRODUCT)
        index.hnsw.efConstruction = self.ef_construction
        return index

    def add(self, vectors: np.ndarray, texts: Sequence[str], contexts: Sequence[str] = ()) -> None:
        vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        if len(vectors) == 0:
            return
        start = self.rows.size
        self.rows.add(vectors)
        if self._index is None:
            self._index = self._graph(vectors.shape[1])
        self._index.add(vectors)  # type: ignore[attr-defined]
        self._labels = np.concatenate([self._labels, np.arange(start, self.rows.size, dtype=np.int64)])

    def remove(self, positions: Sequence[int]) -> None:
        self.rows.alive[list(positions)] = False
        dead = int((~self.rows.alive[self._labels]).sum())
        if self._labels.size and dead > HNSW_COMPACT_SHARE * self._labels.size:
            live = self._labels[self.rows.alive[self._labels]]
            self._index = self._graph(self.rows.matrix.shape[1]) if live.size else None
            if self._index is not None:
                self._index.add(np.ascontiguousarray(self.rows.matrix[live], dtype=np.float32))  # type: ignore[attr-defined]
            self._labels = live

    def nearest(self, query_vector: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """The approximate `k` nearest live positions and their cosine similarities, best first."""
        if self._index is None or k <= 0:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
        index = self._index
        q = np.ascontiguousarray(np.asarray(query_vector, dtype=np.float32).reshape(1, -1))
        want = min(k, len(self))
        ask = want
        while True:  # retired rows take places in the answer: ask for more until `want` live ones came back
            ask = min(ask, self._labels.size)
            index.hnsw.efSearch = max(self.ef_search, ask)  # type: ignore[attr-defined]
            sims, rows = _single_threaded_search(index, q, ask)
            found = rows[0] >= 0
            positions = self._labels[rows[0][found]]
            live = self.rows.alive[positions]
            if live.sum() >= want or ask >= self._labels.size:
                return positions[live][:want], sims[0][found][live][:want]
            ask *= 2

    def search(self, query_vector: np.ndarray, query_text: str, k: int) -> list[Hit]:
        positions, sims = self.nearest(query_vector, k)
        return [(int(p), max(float(s), 0.0), float(s)) for p, s in zip(positions, sims, strict=True)]

    def __len__(self) -> int:
        return int(self.rows.live().sum())


def _single_threaded_search(index: object, query: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """One query through faiss on one OpenMP thread: a single query gains nothing from a team of
    threads, and on a shared machine waking one costs more than the search (at 100,000 memories
    p50 23 ms with faiss's default threads, 3.2 ms with one; docs/longterm.md)."""
    import faiss

    threads = faiss.omp_get_max_threads()
    faiss.omp_set_num_threads(1)
    try:
        return index.search(query, k)  # type: ignore[attr-defined]
    finally:
        faiss.omp_set_num_threads(threads)


class Bm25Index:
    """Okapi BM25 over an inverted index, added to and retired from in place.

    rank-bm25 (the reference) scores every document per query and must be rebuilt on each
    change; bm25s is fast but static. Here a query touches only the posting lists of its terms,
    and document frequencies, lengths and their mean are kept current, so scores equal a fresh
    build's. idf is Lucene's ``log(1 + (N - df + 0.5) / (df + 0.5))`` (never negative).
    """

    def __init__(self, k1: float = 0.9, b: float = 0.4) -> None:
        self.k1, self.b = k1, b
        self._postings: dict[str, tuple[list[int], list[float]]] = {}
        self._arrays: dict[str, tuple[np.ndarray, np.ndarray]] = {}  # posting lists as arrays, by term
        # Each queried term's BM25 per posting (weight 1, retired ones 0), valid until the index changes.
        self._contributions: dict[str, tuple[int, np.ndarray, np.ndarray]] = {}
        self._version = 0  # bumped by every add and remove: lengths, their mean and idf move with it
        self._docs: list[Counter[str]] = []
        self._length = np.zeros(0, dtype=np.float64)
        self.alive = np.zeros(0, dtype=bool)
        self.df: Counter[str] = Counter()
        self.live = 0
        self._total_length = 0.0

    def add(self, documents: Sequence[Sequence[str] | Mapping[str, float]]) -> None:
        """Append documents at the next positions: each its terms, or its weighted term counts (BM25F-style
        fields: a term's tf is the sum of its fields' weights, the length their weighted sum)."""
        start = len(self._docs)
        need = start + len(documents)
        if need > self._length.size:
            size = max(need, 2 * self._length.size, 16)
            self._length = np.concatenate([self._length, np.zeros(size - self._length.size)])
            self.alive = np.concatenate([self.alive, np.zeros(size - self.alive.size, dtype=bool)])
        for position, terms in enumerate(documents, start=start):
            counts = Counter(terms) if not isinstance(terms, Mapping) else Counter(dict(terms))
            length = float(sum(counts.values()))
            self._docs.append(counts)
            self._length[position] = length
            self.alive[position] = True
            self._total_length += length
            for term, tf in counts.items():
                docs, tfs = self._postings.setdefault(term, ([], []))
                docs.append(position)
                tfs.append(tf)
                self._arrays.pop(term, None)
            self.df.update(counts.keys())
        self.live += len(documents)
        self._version += 1

    def remove(self, positions: Sequence[int]) -> None:
        for position in positions:
            if not self.alive[position]:
                continue
            self.alive[position] = False
            self._version += 1
            self.live -= 1
            self._total_length -= self._length[position]
            self.df.subtract(self._docs[position].keys())

    def idf(self, term: str) -> float:
        df = self.df.get(term, 0)
        return math.log(1.0 + (self.live - df + 0.5) / (df + 0.5))

    def bound(self, weights: Mapping[str, float]) -> float:
        """The highest score any document could get: each term's weight x idf x (k1 + 1), over the terms a live
        document holds (a term whose documents are all retired adds nothing, as in a fresh build)."""
        return sum(w * self.idf(t) * (self.k1 + 1.0) for t, w in weights.items() if self.df.get(t, 0) > 0)

    def _posting(self, term: str) -> tuple[np.ndarray, np.ndarray]:
        arrays = self._arrays.get(term)
        if arrays is None:
            docs, tfs = self._postings[term]
            arrays = self._arrays[term] = (np.asarray(docs, dtype=np.int64), np.asarray(tfs, dtype=np.float64))
        return arrays

    def _contribution(self, term: str) -> tuple[np.ndarray, np.ndarray]:
        """The term's postings and each one's BM25 at weight 1 (0 when retired), cached until the next change."""
        cached = self._contributions.get(term)
        if cached is not None and cached[0] == self._version:
            return cached[1], cached[2]
        docs, tfs = self._posting(term)
        norm = self.k1 * (1.0 - self.b + self.b * self._length[docs] / (self._total_length / self.live))
        values = tfs * ((self.k1 + 1.0) * self.idf(term)) / (tfs + norm) * self.alive[docs]
        self._contributions[term] = (self._version, docs, values)
        return docs, values

    def scores(self, weights: Mapping[str, float]) -> np.ndarray:
        """BM25 of every position for query terms with weights (retired positions score 0).

        A query costs its terms' postings: each term's per-posting BM25 is computed once per state of
        the index and added into the positions it names (unique within a posting list).
        """
        out = np.zeros(len(self._docs), dtype=np.float64)
        if self.live == 0:
            return out
        for term, weight in weights.items():
            if term in self._postings:
                docs, values = self._contribution(term)
                out[docs] += values if weight == 1.0 else weight * values
        return out

    def feedback(self, query: Mapping[str, float], top: np.ndarray, terms: int, weight: float) -> dict[str, float]:
        """`query` plus the `terms` terms the `top` documents stress most (sum of idf x tf / length)."""
        mass: Counter[str] = Counter()
        for position in top:
            length = max(self._length[position], 1.0)
            for term, tf in self._docs[position].items():
                if term not in query:
                    mass[term] += self.idf(term) * tf / length
        expanded = dict(query)
        for term, _ in sorted(mass.items(), key=lambda kv: (-kv[1], kv[0]))[:terms]:
            expanded[term] = weight
        return expanded

    def __len__(self) -> int:
        return self.live


class HybridIndex:
    """BM25 and dense cosine fused linearly into a relevance in [0, 1] (see the module docstring).

    Args:
        spec: The BM25, fusion, feedback and ANN parameters (None: the default `IndexSpec`).
    """

    def __init__(self, spec: IndexSpec | None = None) -> None:
        self.spec = spec = spec or IndexSpec()
        self.bm25 = Bm25Index(spec.bm25_k1, spec.bm25_b)
        self.dense: ExactIndex | HnswIndex = ExactIndex()

    def add(self, vectors: np.ndarray, texts: Sequence[str], contexts: Sequence[str] = ()) -> None:
        """Index each text, with its context (the turn before it) as a second BM25 field at `context_weight`."""
        if contexts:
            self.bm25.add([self._fields(t, c) for t, c in zip(texts, contexts, strict=True)])
        else:
            self.bm25.add([search_terms(t) for t in texts])
        self.dense.add(vectors, texts)
        if isinstance(self.dense, ExactIndex) and len(self.dense) >= self.spec.ann_min_items:
            ann = HnswIndex(self.spec.hnsw_m, self.spec.ef_construction, self.spec.ef_search)
            ann.add(self.dense.rows.matrix, ())
            ann.remove(np.flatnonzero(~self.dense.rows.live()).tolist())
            self.dense = ann

    def _fields(self, text: str, context: str) -> dict[str, float]:
        """The text's term counts plus `context_weight` per occurrence of a context term."""
        counts: dict[str, float] = dict(Counter(search_terms(text)))
        w = self.spec.context_weight
        for term in search_terms(context):
            counts[term] = counts.get(term, 0.0) + w
        return counts

    def remove(self, positions: Sequence[int]) -> None:
        self.bm25.remove(positions)
        self.dense.remove(positions)

    def lexical(self, query: Mapping[str, float]) -> np.ndarray:
        """BM25 of the weighted query terms over the query's bound: each position's share in [0, 1]."""
        scores = self.bm25.scores(query)
        bound = self.bm25.bound(query)
        return scores / bound if bound > 0 else scores

    def search(
        self, query_vector: np.ndarray, query_text: str, k: int, terms: Mapping[str, float] | None = None
    ) -> list[Hit]:
        """The top `k` fused hits; `terms` (weighted query terms, e.g. expanded by the `feedback` stage)
        replace the text's own search terms on the BM25 side."""
        if len(self) == 0 or k <= 0:
            return []
        lexical = self.lexical(dict(Counter(search_terms(query_text))) if terms is None else terms)
        if isinstance(self.dense, ExactIndex):
            candidates = np.flatnonzero(self.dense.rows.live())
            sims = self.dense.similarities(query_vector)[candidates]
        else:  # the two sides' best candidates, each scored exactly on both
            near, _ = self.dense.nearest(query_vector, max(k, HYBRID_CANDIDATES))
            lexical_best = top_positions(lexical, max(k, HYBRID_CANDIDATES))
            candidates = np.union1d(lexical_best[lexical[lexical_best] > 0], near)
            sims = cosines(self.dense.rows.matrix[candidates], query_vector)
        w_b, w_d = self.spec.bm25_weight, self.spec.dense_weight
        relevance = (w_b * lexical[candidates] + w_d * np.maximum(sims, 0.0)) / (w_b + w_d)
        best = top_positions(relevance, k)
        return [(int(candidates[i]), float(relevance[i]), float(sims[i])) for i in best]

    def __len__(self) -> int:
        return len(self.bm25)


def make_index(spec: IndexSpec) -> MemoryIndex:
    """A new, empty index of `spec.kind`.

    Args:
        spec: The kind (exact, hnsw or hybrid) and its parameters.

    Returns:
        The index (`IndexSpec` refuses an unknown kind when it is built).
    """
    if spec.kind == "exact":
        return ExactIndex()
    if spec.kind == "hnsw":
        return HnswIndex(spec.hnsw_m, spec.ef_construction, spec.ef_search)
    return HybridIndex(spec)
