"""The summarizer's TF-IDF vectors and sentence scores are scikit-learn's and the reference's, bit for bit."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import reference_summarize
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import sparse
from sklearn.feature_extraction.text import TfidfVectorizer

from memlab.dialogues import load_locomo
from memlab.llm import summarize as fast
from memlab.llm.corpus import corpus
from memlab.llm.prompts import render_transcript
from memlab.llm.tfidf import tfidf_vectors
from memlab.text import content_term_tuple


def _by_term(vectors: sparse.csr_array, terms: list[str]) -> list[list[tuple[str, bytes]]]:
    """Each row as (term, float64 bytes) pairs in storage order: values and their order, whatever the labels."""
    return [
        [(terms[j], vectors.data[k].tobytes()) for k, j in enumerate(vectors.indices) if lo <= k < hi]
        for lo, hi in zip(vectors.indptr[:-1], vectors.indptr[1:], strict=True)
    ]


def _assert_same_vectors(sentences: list[str]) -> None:
    try:
        vectorizer = TfidfVectorizer(analyzer=content_term_tuple, sublinear_tf=True)
        expected = sparse.csr_array(vectorizer.fit_transform(sentences))
    except ValueError:  # empty vocabulary
        assert tfidf_vectors(sentences) is None
        return
    ours = tfidf_vectors(sentences)
    assert ours is not None and ours.shape == expected.shape
    alphabetical = vectorizer.get_feature_names_out().tolist()
    # our columns are numbered by first use: recover each label from the first row that uses it
    first_use = list(dict.fromkeys(t for s in sentences for t in content_term_tuple(s)))
    assert _by_term(ours, first_use) == _by_term(expected, alphabetical)


def _assert_same_scores(sentences: list[str], names: set[str], personal: bool) -> None:
    expected_score, expected_similarity = reference_summarize.score_sentences(sentences, names, personal)
    score, similarity = fast.score_sentences(sentences, names, personal)
    assert score.tobytes() == expected_score.tobytes()
    expected_similarity.sort_indices()
    for field in ("data", "indices", "indptr"):
        assert getattr(similarity, field).tobytes() == getattr(expected_similarity, field).tobytes(), field


@pytest.mark.parametrize("personal", [False, True])
def test_locomo_transcripts_score_as_the_reference_does(locomo_path: Path, personal: bool) -> None:
    messages = list(load_locomo(locomo_path, max_dialogues=1)[0].messages())
    for cut in (3, 40, 200, len(messages)):
        found = corpus(render_transcript(messages[:cut])[:50_000])
        texts = [s.text for s in found.sentences]
        _assert_same_vectors(texts)
        _assert_same_scores(texts, found.names(), personal)


_WORDS = st.sampled_from(
    [
        *("the", "a", "I", "Oslo", "oslo", "2021", "10:30", "cats", "cat's", "love", "loves", "painting"),
        *("我", "喜欢", "咖啡", "ok", "thanks", "Berlin", "May", "never", "again"),
    ]
)


@settings(max_examples=200)
@given(
    sentences=st.lists(st.lists(_WORDS, max_size=12).map(" ".join), min_size=1, max_size=30),
    personal=st.booleans(),
)
def test_generated_sentences_score_as_the_reference_does(sentences: list[str], personal: bool) -> None:
    _assert_same_vectors(sentences)
    _assert_same_scores(sentences, {"oslo", "berlin"}, personal)


def test_no_content_terms_at_all() -> None:
    assert tfidf_vectors(["the", "a I", ""]) is None
    score, similarity = fast.score_sentences(["the", "a I"], set())
    assert similarity.nnz == 0 and np.all(score == 0)
