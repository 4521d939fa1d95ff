"""The `Embedder` protocol and the per-text cache every backend shares.

`embed(texts)` returns float32 rows, L2-normalized, so cosine similarity is a dot product.
Each distinct text is embedded once per embedder (cache keyed by the text's sha1); a backend whose rows depend on
the text alone (`CachedEmbedder.shared_scope`) also shares them with the process's other instances.
"""

from __future__ import annotations

import hashlib
from collections.abc import Hashable, Sequence
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


# Rows shared by the instances of a process, by (`shared_scope()`, sha1 of the text): the runs of a sweep and a
# test's variants embed the same texts. Cleared when full (8,192 rows: 24 MiB at 768 dimensions); each instance's own
# cache holds the same row objects, not copies.
SHARED_ROWS = 1 << 13
_SHARED: dict[tuple[Hashable, bytes], np.ndarray] = {}


class CachedEmbedder:
    """Base for backends: batches the texts it has not seen and records one EMBED_CALL per batch.

    Each instance reports every text it had not embedded itself, whether its row was computed or taken from
    another instance's (`shared_scope`), so a run's events do not depend on what else the process embedded.
    """

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
            scope = self.shared_scope()
            with timed() as t:
                todo = missing
                if scope is not None:
                    shared = {k: row for k in missing if (row := _SHARED.get((scope, k))) is not None}
                    self._cache.update(shared)
                    todo = [k for k in missing if k not in shared]
                for start in range(0, len(todo), self.batch_size):
                    batch = todo[start : start + self.batch_size]
                    rows = l2_normalize(np.asarray(self._embed([by_key[k] for k in batch]), dtype=np.float32))
                    self._cache.update(zip(batch, rows, strict=True))
                    if scope is not None:
                        if len(_SHARED) + len(batch) > SHARED_ROWS:
                            _SHARED.clear()
                        _SHARED.update(((scope, k), row) for k, row in zip(batch, rows, strict=True))
            emit(EMBED_CALL, backend=self.name, texts=len(missing), latency_us=t["us"])
        if not keys:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.stack([self._cache[k] for k in keys])

    def shared_scope(self) -> Hashable | None:
        """What a row depends on besides its text, when nothing else: its rows are then shared (None: not shared)."""
        return None

    def _embed(self, texts: list[str]) -> np.ndarray:
        raise NotImplementedError
