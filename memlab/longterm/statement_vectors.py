"""The vectors of memories' statements, kept with a namespace's entry and shared by the two rules by meaning.

Stage `updates` (`memlab.longterm.updates`) compares a retrieved memory's statements with later ones query after
query; the links by meaning (`memlab.longterm.revision_meaning`) compare a new memory's with the speaker's earlier
ones save after save. Both read sentences of the same memories by the same embedder (the run's, or all-MiniLM-L6-v2),
and a semantic embedder's forward pass is their cost: each sentence is embedded once here, for both. The cache lives
with the service's entry of the namespace (`LongTermMemoryService`), not in a module, so two services or two runs
in one process share nothing.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

from memlab.embed.base import Embedder
from memlab.embed.minilm import rule_embedder


class SentenceVectors:
    """Sentences embedded once by one embedder, each kept as its unit row."""

    def __init__(self, embedder: Embedder) -> None:
        self.embedder = embedder
        self._rows: dict[str, np.ndarray] = {}
        self._stacked: dict[tuple[str, ...], np.ndarray] = {}  # a memory's sentences -> their rows, stacked once

    def prepare(self, sentences: Iterable[str]) -> None:
        """Embed the `sentences` not seen yet, in one batch."""
        missing = list(dict.fromkeys(s for s in sentences if s not in self._rows))
        if missing:
            self._rows.update(zip(missing, self.embedder.embed(missing), strict=True))

    def rows(self, sentences: Sequence[str]) -> np.ndarray:
        """One unit row per sentence (none for no sentence), stacked once per memory: stage `updates` compares the
        same memories pair by pair, query after query."""
        key = tuple(sentences)
        stacked = self._stacked.get(key)
        if stacked is None:
            self.prepare(key)
            rows = [self._rows[s] for s in key]
            stacked = np.stack(rows) if rows else np.zeros((0, self.embedder.dim), dtype=np.float32)
            self._stacked[key] = stacked
        return stacked


class RuleVectors:
    """One namespace's `SentenceVectors`, one per rule embedder (`embed.minilm.RULE_EMBEDDERS`: run or minilm)."""

    def __init__(self, run_embedder: Embedder) -> None:
        self._run_embedder = run_embedder
        self._by_choice: dict[str, SentenceVectors] = {}

    def __call__(self, choice: str) -> SentenceVectors:
        """The sentence vectors by the run's embedder (``run``) or by MiniLM (``minilm``, loaded at the first call)."""
        vectors = self._by_choice.get(choice)
        if vectors is None:
            vectors = self._by_choice[choice] = SentenceVectors(rule_embedder(choice, self._run_embedder))
        return vectors
