"""Speed of the default embedder over a whole corpus: every LoCoMo turn, fresh (uncached) each round."""

from __future__ import annotations

from pathlib import Path

from memlab.embed import HashingEmbedder
from memlab.embed.retrieval_eval import locomo_conversations


def test_embed_all_locomo_turns_with_the_default(benchmark, locomo_path: Path) -> None:
    texts = [t for _, turns, _ in locomo_conversations(locomo_path) for t in turns]
    vectors = benchmark(lambda: HashingEmbedder().embed(texts))
    assert vectors.shape == (len(texts), 768) == (4124, 768)
