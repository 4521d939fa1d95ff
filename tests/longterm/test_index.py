"""The indexes: incremental BM25 equals a fresh build and a reference formula, calibrated relevance, HNSW updates."""

from __future__ import annotations

import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memlab.embed import HashingEmbedder
from memlab.longterm import IndexSpec, MemoryType
from memlab.longterm.index import Bm25Index, ExactIndex, HnswIndex, HybridIndex, cosines, one_blas_thread
from memlab.longterm.injection import parse_block
from memlab.text import search_terms

from .support import context

CORPUS = [
    "Caroline went to the LGBTQ support group yesterday",
    "Melanie painted a sunrise over the lake",
    "Caroline is researching adoption agencies",
    "Melanie ran a charity race for mental health",
    "the support group gave Caroline courage",
]


def reference_bm25(docs: list[list[str]], query: list[str], k1: float, b: float) -> np.ndarray:
    """Okapi BM25 with Lucene's idf, written out term by term (independent of the index)."""
    n, mean = len(docs), sum(map(len, docs)) / len(docs)
    out = np.zeros(n)
    for term in query:
        df = sum(term in d for d in docs)
        idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
        for i, d in enumerate(docs):
            tf = d.count(term)
            out[i] += idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * len(d) / mean)) if tf else 0.0
    return out


def test_bm25_matches_the_reference_formula() -> None:
    docs = [search_terms(t) for t in CORPUS]
    index = Bm25Index(0.9, 0.4)
    index.add(docs)
    query = search_terms("When did Caroline go to the support group?")
    expected = reference_bm25(docs, query, 0.9, 0.4)
    assert index.scores(dict.fromkeys(query, 1.0)) == pytest.approx(expected)
    assert expected.max() > 0


def test_a_weighted_field_counts_its_weight_in_tf_and_length() -> None:
    """BM25F-style fields, written out: the context's terms count `context_weight` each in tf and length."""
    texts = ["Caroline joined a support group", "Melanie painted the lake", "Melanie ran a race"]
    contexts = ["How was the weekend?", "Did Caroline join the support group?", ""]
    weight = 0.4
    index = HybridIndex(IndexSpec(context_weight=weight))
    index.add(HashingEmbedder().embed(texts), texts, contexts)
    query = search_terms("Caroline support group")
    n, k1, b = len(texts), 0.9, 0.4
    tfs = [
        {t: search_terms(x).count(t) + weight * search_terms(c).count(t) for t in query}
        for x, c in zip(texts, contexts, strict=True)
    ]
    lengths = [len(search_terms(x)) + weight * len(search_terms(c)) for x, c in zip(texts, contexts, strict=True)]
    mean = sum(lengths) / n
    expected = np.zeros(n)
    for term in query:
        df = sum(tf[term] > 0 for tf in tfs)
        idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
        for i, tf in enumerate(tfs):
            expected[i] += idf * tf[term] * (k1 + 1) / (tf[term] + k1 * (1 - b + b * lengths[i] / mean))
    assert index.bm25.scores(dict.fromkeys(query, 1.0)) == pytest.approx(expected)
    assert expected[0] > expected[1] > 0  # the memory that says it ranks above the one whose context asks it
    # Weight 1 is the context indexed as part of the memory's own text.
    whole = HybridIndex(IndexSpec())
    whole.add(HashingEmbedder().embed(texts), [f"{x} {c}" for x, c in zip(texts, contexts, strict=True)])
    fields = HybridIndex(IndexSpec(context_weight=1.0))
    fields.add(HashingEmbedder().embed(texts), texts, contexts)
    assert fields.bm25.scores(dict.fromkeys(query, 1.0)) == pytest.approx(whole.bm25.scores(dict.fromkeys(query, 1.0)))


@settings(max_examples=40)
@given(
    st.lists(st.lists(st.sampled_from("abcdefgh"), min_size=1, max_size=6), min_size=2, max_size=12),
    st.data(),
)
def test_incremental_updates_equal_a_fresh_build(docs: list[list[str]], data: st.DataObject) -> None:
    removed = data.draw(st.sets(st.integers(0, len(docs) - 1), max_size=len(docs) - 1))
    split = data.draw(st.integers(0, len(docs)))
    query = {"a": 1.0, "c": 1.0, "h": 0.5}
    incremental = Bm25Index()
    incremental.add(docs[:split])
    incremental.scores(query)  # a query between changes (per-term scores are cached until the next change)
    incremental.add(docs[split:])
    incremental.scores(query)
    incremental.remove(sorted(removed))
    kept = [i for i in range(len(docs)) if i not in removed]
    fresh = Bm25Index()
    fresh.add([docs[i] for i in kept])
    assert incremental.scores(query)[kept] == pytest.approx(fresh.scores(query))
    assert not incremental.scores(query)[sorted(removed)].any()
    assert incremental.bound(query) == pytest.approx(fresh.bound(query))  # what the hybrid relevance divides by


def test_a_term_whose_documents_are_all_retired_leaves_the_bound() -> None:
    """The defect: its maximal idf stayed in the bound, so every relevance shrank after an archive and a resumed
    run (its index built afresh) ranked otherwise than the run it resumed."""
    incremental, fresh = Bm25Index(), Bm25Index()
    incremental.add([["alice", "paris"], ["bob", "paris"], ["carol", "zebra"]])
    incremental.remove([2])
    fresh.add([["alice", "paris"], ["bob", "paris"]])
    query = {"paris": 1.0, "zebra": 1.0}
    assert incremental.bound(query) == pytest.approx(fresh.bound(query))


def test_hybrid_relevance_is_the_documented_linear_fusion_in_0_1() -> None:
    embedder = HashingEmbedder()
    spec = IndexSpec(dense_weight=0.25)
    index = HybridIndex(spec)
    index.add(embedder.embed(CORPUS), CORPUS)
    query = "Caroline support group"
    qv = embedder.embed([query])[0]
    hits = index.search(qv, query, len(CORPUS))
    terms = search_terms(query)
    bm25 = reference_bm25([search_terms(t) for t in CORPUS], terms, spec.bm25_k1, spec.bm25_b)
    n = len(CORPUS)
    bound = sum(
        math.log(1 + (n - df + 0.5) / (df + 0.5)) * (spec.bm25_k1 + 1)
        for df in (sum(t in search_terms(d) for d in CORPUS) for t in terms)
    )
    cos = embedder.embed(CORPUS) @ qv
    expected = (bm25 / bound + 0.25 * np.maximum(cos, 0)) / 1.25
    assert [p for p, _, _ in hits] == list(np.argsort(-expected, kind="stable"))
    assert [r for _, r, _ in hits] == pytest.approx(sorted(expected, reverse=True))
    assert all(0.0 <= r <= 1.0 for _, r, _ in hits)


def test_the_injected_relevance_is_calibrated_not_a_rank_fusion_score(make_service) -> None:
    service = make_service(index="hybrid")
    ctx = context()
    service.save(ctx, "Ann adopted a dog named Rex", MemoryType.EPISODE)
    service.save(ctx, "Ann works as a nurse in Oslo", MemoryType.FACT)
    from memlab.longterm import LongTermConfig, LongTermMemoryComponent

    component = LongTermMemoryComponent(
        LongTermConfig(embedder=service.embedder, llm=None, counter="o200k_base", store=None)
    )
    component.service = service
    block = component.render(service.search(ctx, "What is the name of Ann's dog?", 2))
    [(_, first, top), (_, _, low)] = parse_block(block)
    assert first.startswith("Ann adopted") and 0.0 < low < top < 1.0
    assert top != pytest.approx(1.0) and low != pytest.approx(1 / 21, abs=1e-3)  # not RRF's 1.00 and 0.0476


def test_hnsw_updates_in_place_and_skips_retired_positions() -> None:
    rng = np.random.default_rng(1)
    vectors = rng.standard_normal((400, 32)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    hnsw, exact = HnswIndex(ef_search=128), ExactIndex()
    for chunk in np.array_split(vectors, 4):  # added in four saves, never rebuilt
        hnsw.add(chunk, ())
        exact.add(chunk, ())
    retired = list(range(0, 400, 3))
    hnsw.remove(retired)  # a third retired: past the compaction share, so the graph is rebuilt from live rows
    exact.remove(retired)
    assert len(hnsw) == len(exact) == 400 - len(retired)
    overlap = []
    for q in vectors[1::7]:
        found = [p for p, _, _ in hnsw.search(q, "", 10)]
        truth = [p for p, _, _ in exact.search(q, "", 10)]
        assert not set(found) & set(retired)
        overlap.append(len(set(found) & set(truth)) / 10)
    assert np.mean(overlap) >= 0.95


def test_a_save_adds_to_the_index_without_rebuilding_it(make_service) -> None:
    service = make_service(index="hybrid")
    ctx = context()
    service.save(ctx, "Ann adopted a dog named Rex", MemoryType.EPISODE)
    service.search(ctx, "dog", 1)
    [entry] = service._indexes.values()
    index = entry.index
    service.save(ctx, "Ann works as a nurse in Oslo", MemoryType.FACT)
    [hit] = service.search(ctx, "nurse", 1)
    assert hit.memory.content == "Ann works as a nurse in Oslo"
    assert entry.index is index and len(index) == 2


def test_one_query_products_run_on_one_blas_thread_with_the_same_results() -> None:
    """`one_blas_thread` holds numpy's BLAS to one thread while it lasts, restores it after, and the
    product of the namespace's vectors with a query is the same either way: the float64 product `cosines`
    computes (float64 rows holding float32 vectors, as `_Rows` keeps them, and a float32 query widened)."""
    from memlab.longterm import index

    def blas_threads() -> list[int]:  # of the BLAS libraries numpy had loaded when the helper first ran
        return [lib["num_threads"] for lib in index._blas().info()]  # type: ignore[attr-defined]

    rng = np.random.default_rng(0)
    matrix = rng.random((800, 768), dtype=np.float32).astype(np.float64)
    query = rng.random(768, dtype=np.float32).astype(np.float64)
    before, default = blas_threads(), matrix @ query
    with one_blas_thread():
        assert blas_threads() and set(blas_threads()) == {1}
        single = matrix @ query
    assert blas_threads() == before
    assert np.array_equal(single, default)


def test_cosines_are_the_exact_dot_products_rounded_once() -> None:
    """`cosines` equals each dot product summed exactly (`math.fsum` of the float32 values' exact products) and
    rounded once to float32, for one query and for several: what any BLAS kernel's float64 sums round to. A float32
    product (what the index computed before) misses it for most values."""
    rng = np.random.default_rng(0)
    matrix, queries = rng.random((300, 64), dtype=np.float32), rng.random((5, 64), dtype=np.float32)
    exact = np.array(
        [[math.fsum(float(a) * float(b) for a, b in zip(q, row, strict=True)) for row in matrix] for q in queries],
        dtype=np.float32,
    )
    assert np.array_equal(cosines(matrix, queries), exact)
    assert np.array_equal(cosines(matrix, queries[0]), exact[0])
    assert not np.array_equal(queries @ matrix.T, exact)  # the check can tell a float32 product from the exact one


def test_retrievals_are_the_same_bits_on_another_blas_kernel(tmp_path: Path, locomo_path: Path) -> None:
    """OpenBLAS's SSE3 kernel (chosen on a CPU without AVX) summed the index's float32 products otherwise than the
    AVX ones: 8 of 96 retrievals.jsonl lines differed and a near tie swapped ranks 1 and 2 (an outside audit)."""
    args = ("dataset=locomo", f"dataset.path={locomo_path}", "longterm=locomo", "sim.max_dialogues=2")
    for kernel in ("", "Prescott"):
        env = {**os.environ, "OPENBLAS_CORETYPE": kernel} if kernel else dict(os.environ)
        run = [sys.executable, "-m", "memlab", "run", *args, "sim.max_sessions=5", "report.plots=false"]
        done = subprocess.run([*run, f"output_dir={tmp_path / (kernel or 'default')}"], env=env, capture_output=True)
        assert done.returncode == 0, done.stderr[-2000:]
    for name in ("retrievals.jsonl", "retrievals.trec", "metrics.json"):
        assert (tmp_path / "default" / name).read_bytes() == (tmp_path / "Prescott" / name).read_bytes(), name


def test_the_semantic_entry_is_locomo_with_minilm_on_the_dense_side(make_config) -> None:
    semantic, locomo = (make_config("dataset=locomo", f"longterm={e}").longterm for e in ("locomo_semantic", "locomo"))
    assert (semantic.embedder._target_, semantic.embedder.threads) == ("memlab.embed.MiniLMEmbedder", 1)
    assert semantic.index.dense_weight == 0.3 and locomo.index.dense_weight == 0.1
    for key in ("rerank", "stages", "max_items", "namespace"):
        assert semantic[key] == locomo[key]
    assert {k: v for k, v in semantic.index.items() if k != "dense_weight"} == {
        k: v for k, v in locomo.index.items() if k != "dense_weight"
    }
