"""The `Embedder` protocol and the per-text cache every backend shares.

`embed(texts)` returns float32 rows, L2-normalized, so cosine similarity is a dot product.
Each distinct text is embedded once per embedder (cache keyed by the text's sha1).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import numpy as np

from memlab.trace import EMBED_CALL, emit, timed


@runtime_checkable
class Embedder(Protocol):
    """Texts in, unit-length float32 vectors out."""

    name: str
    dim: int

    def embed(self, texts: Sequence[str]) -> np.ndarray: ...


def l2_normalize(vectors: np.ndarray) -> np.ndarray:
    """Each row scaled to unit length (a zero row stays zero), as float32: what every `Embedder` returns.

    Args:
        vectors: One vector per row.
    """
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return (vectors / np.where(norms == 0, 1.0, norms)).astype(np.float32)


class CachedEmbedder:
    """Base for backends: batches the texts it has not seen and records one EMBED_CALL per batch."""

    name = "embedder"
    dim = 0
    batch_size = 256

    def __init__(self) -> None:
        self._cache: dict[bytes, np.ndarray] = {}

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        keys = [hashlib.sha1(t.encode("utf-8")).digest() for t in texts]
        missing = list(dict.fromkeys(k for k in keys if k not in self._cache))
        if missing:
            by_key = dict(zip(keys, texts, strict=True))
            with timed() as t:
                for start in range(0, len(missing), self.batch_size):
                    batch = missing[start : start + self.batch_size]
                    rows = l2_normalize(np.asarray(self._embed([by_key[k] for k in batch]), dtype=np.float32))
                    self._cache.update(zip(batch, rows, strict=True))
            emit(EMBED_CALL, backend=self.name, texts=len(missing), latency_us=t["us"])
        if not keys:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.stack([self._cache[k] for k in keys])

    def _embed(self, texts: list[str]) -> np.ndarray:
        raise NotImplementedError
