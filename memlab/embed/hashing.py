"""The offline default embedder: character n-grams hashed straight into `dim` signed buckets.

No fitting and no download: each word-bounded character 3- to 5-gram is hashed (MurmurHash3, x86 32-bit, seed 0)
to one of `dim` dimensions with a hash-chosen sign (a count sketch), so cosine similarity approximates the n-gram
overlap of two texts. Deterministic across runs and machines; lexical rather than semantic, which
docs/backends.md states with its measured retrieval figures. Character n-grams alone beat word n-grams here,
and hashing straight into `dim` beats projecting a large hashed space at random (whose sparse projection drops
most features at 384 dimensions).

The vectors are scikit-learn's ``HashingVectorizer(n_features=dim, analyzer="char_wb", ngram_range=(3, 5),
alternate_sign=True, norm="l2")`` to the bit (tests/embed/test_hashing.py compares them on both corpora and on
generated text), computed with the `mmh3` package's MurmurHash3 and numpy: importing scikit-learn's text module
costs ~1.1 CPU s (scipy.stats among it) in every process that builds this embedder, the hashing a few ms.
"""

from __future__ import annotations

import itertools
import re

import mmh3
import numpy as np

from memlab.embed.base import CachedEmbedder

# First design document, semantic retrieval: "将用户消息转为 768/1536 维向量".
DEFAULT_DIM = 768
CHAR_NGRAMS = (3, 5)
_WHITE_SPACES = re.compile(r"\s\s+")  # scikit-learn's `_VectorizerMixin._white_spaces`


def char_wb_ngrams(text: str, ngram_range: tuple[int, int] = CHAR_NGRAMS) -> list[str]:
    """scikit-learn's ``char_wb`` analyzer with its defaults: lowercased, runs of white space made one space, each
    word padded with a space either side; a word shorter than an n-gram is counted once, as itself.

    >>> char_wb_ngrams("Hi  there", (3, 4))
    [' hi', 'hi ', ' hi ', ' th', 'the', 'her', 'ere', 're ', ' the', 'ther', 'here', 'ere ']
    """
    low, high = ngram_range
    grams: list[str] = []
    append = grams.append
    for word in _WHITE_SPACES.sub(" ", text.lower()).split():
        padded = f" {word} "
        size = len(padded)
        for n in range(low, high + 1):
            offset = 0
            append(padded[:n])
            while offset + n < size:
                offset += 1
                append(padded[offset : offset + n])
            if offset == 0:  # a word no longer than n: counted once
                break
    return grams


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

    def shared_scope(self) -> tuple[str, int]:
        """A row depends on its text and `dim` alone (hashed n-grams, normalized per row): shared in the process."""
        return self.name, self.dim

    def _embed(self, texts: list[str]) -> np.ndarray:
        """Each text's n-grams summed into signed buckets as scikit-learn's `FeatureHasher` sums them (bucket
        ``|h| % dim`` of the signed 32-bit hash ``h``, sign ``+1`` for ``h >= 0``), then each row L2-normalized."""
        grams = [char_wb_ngrams(text) for text in texts]
        flat = list(itertools.chain.from_iterable(grams))
        hashes = np.fromiter(map(mmh3.hash, flat), dtype=np.int64, count=len(flat))
        # in int64 |-2**31| is 2**31, whose bucket is FeatureHasher's for that hash: (2**31 - 1 - (dim - 1)) % dim
        buckets = np.abs(hashes) % self.dim
        cells = np.repeat(np.arange(len(texts)) * self.dim, [len(g) for g in grams]) + buckets
        signs = np.where(hashes >= 0, 1.0, -1.0)
        counts = np.bincount(cells, weights=signs, minlength=len(texts) * self.dim)  # int64 when nothing was hashed
        rows = counts.astype(np.float64, copy=False).reshape(len(texts), self.dim)
        # integer counts: the sum of squares is exact, so sqrt and division round as scikit-learn's l2 `normalize`
        norms = np.sqrt((rows * rows).sum(axis=1, keepdims=True))
        np.divide(rows, norms, out=rows, where=norms > 0)
        return rows.astype(np.float32)
