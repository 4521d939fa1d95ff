"""Sentence TF-IDF vectors, scikit-learn's to the bit, from term counts kept per sentence.

The summarizer's sentence vectors are ``TfidfVectorizer(analyzer=content_term_tuple,
sublinear_tf=True).fit_transform(sentences)``. scikit-learn builds that vocabulary in Python over
every term of every sentence on each call (and takes a second to import), while a replay
summarizes nearly the same sentences on every call. Here a sentence's distinct terms (process-wide
integer ids, in first-occurrence order) and their counts are computed once, and laid out once as
CountVectorizer does (`laid_out`: each row's terms in the order the corpus first used them; a
growing corpus adds the rows of its new sentences to the earlier ones); a call applies
TfidfTransformer's arithmetic operation for operation, so every float is the one
scikit-learn computes (tests/llm/test_tfidf.py compares them bit for bit). Only the column labels
differ (first use in the corpus, not alphabetical), which no value depends on.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING

import numpy as np

from memlab.text import content_term_tuple

if TYPE_CHECKING:
    from scipy import sparse

_TERM_IDS: dict[str, int] = {}  # every content term this process has seen, by first sight


@functools.lru_cache(maxsize=1 << 16)
def term_counts(text: str) -> tuple[np.ndarray, np.ndarray]:
    """A sentence's distinct content-term ids in the order it first uses them, and their counts."""
    counts: dict[int, int] = {}
    for term in content_term_tuple(text):
        i = _TERM_IDS.setdefault(term, len(_TERM_IDS))
        counts[i] = counts.get(i, 0) + 1
    return np.fromiter(counts, np.int64, len(counts)), np.fromiter(counts.values(), np.int64, len(counts))


def count_matrix(sentences: list[str]) -> sparse.csr_array | None:
    """The term counts CountVectorizer(analyzer=content_term_tuple) gives, up to column labels; None: no terms."""
    rows = [term_counts(s) for s in sentences]
    columns: dict[int, int] = {}
    indices, counts = laid_out(columns, rows)
    lengths = np.fromiter((len(ids) for ids, _ in rows), np.int64, len(rows))
    return as_matrix(indices, counts, lengths, len(columns)) if columns else None


def laid_out(columns: dict[int, int], rows: list[tuple[np.ndarray, np.ndarray]]) -> tuple[np.ndarray, np.ndarray]:
    """More rows of `term_counts` for a count matrix whose terms `columns` (term id -> column) numbers so far.

    Their column indices and counts, flat, row after row, as CountVectorizer lays them out: it numbers
    terms by first use in the corpus, sorts each row by that number, then relabels the columns
    alphabetically without reordering the rows, so labelling the columns by first use gives the same
    rows, entry for entry. Terms new here are numbered on in the order the rows first use them (and
    added to `columns`); earlier rows keep their columns and order, so a corpus that grows at the end
    extends its count matrix instead of laying it out again.
    """
    ids = [i for row, _ in rows for i in row.tolist()]
    if not ids:
        return np.zeros(0, np.int32), np.zeros(0, np.int64)
    column = np.fromiter((columns.setdefault(i, len(columns)) for i in ids), np.int64, len(ids))
    order = np.lexsort((column, np.repeat(np.arange(len(rows)), [len(row) for row, _ in rows])))
    return column[order].astype(np.int32), np.concatenate([c for _, c in rows])[order]


def as_matrix(indices: np.ndarray, counts: np.ndarray, lengths: np.ndarray, width: int) -> sparse.csr_array:
    """The count matrix of `laid_out` rows (`lengths`: entries per row) over `width` terms."""
    from scipy import sparse  # imported on use: it takes a third of a second

    indptr = np.concatenate(([0], np.cumsum(lengths))).astype(np.int32)
    return sparse.csr_array((counts, indices, indptr), shape=(len(lengths), width), dtype=np.int64)


def _sequential_row_sums(values: np.ndarray, indptr: np.ndarray) -> np.ndarray:
    """Each row's sum, added left to right from 0.0 as a C loop does (numpy's `sum` adds pairwise)."""
    lengths = np.diff(indptr)
    padded = np.zeros((len(lengths), int(lengths.max(initial=0)) + 1))
    rows = np.repeat(np.arange(len(lengths)), lengths)
    padded[rows, np.arange(len(values)) - indptr[rows] + 1] = values
    sums: np.ndarray = np.cumsum(padded, axis=1)[:, -1]  # accumulate is sequential; x + 0.0 is x
    return sums


def tfidf_vectors(sentences: list[str]) -> sparse.csr_array | None:
    """``TfidfVectorizer(analyzer=content_term_tuple, sublinear_tf=True).fit_transform``; None where it raises."""
    counts = count_matrix(sentences)
    return None if counts is None else tfidf(counts)


def tfidf(counts: sparse.csr_array) -> sparse.csr_array:
    """TfidfTransformer(sublinear_tf=True) on a count matrix, operation for operation.

    Smooth idf, sublinear tf, l2 norm: ``idf = ln((n + 1) / (df + 1)) + 1``, ``tf = ln(count) + 1``,
    each row divided by the square root of its sum of squares, added in row order
    (`sklearn.utils.sparsefuncs_fast.inplace_csr_row_normalize_l2`).
    """
    from scipy import sparse  # imported on use: it takes a third of a second

    df = np.bincount(counts.indices, minlength=counts.shape[1]).astype(np.float64)
    df += 1.0
    idf = np.full_like(df, fill_value=counts.shape[0] + 1, dtype=np.float64)
    idf /= df
    np.log(idf, out=idf)
    idf += 1.0
    data = counts.data.astype(np.float64)
    np.log(data, out=data)
    data += 1.0
    data *= idf[counts.indices]
    norms = _sequential_row_sums(data * data, counts.indptr)
    nonzero = norms != 0.0
    norms[nonzero] = np.sqrt(norms[nonzero])
    norms[~nonzero] = 1.0  # an empty row stays empty
    data /= np.repeat(norms, np.diff(counts.indptr))
    return sparse.csr_array((data, counts.indices, counts.indptr), shape=counts.shape)
