"""Speed of the default embedder over a whole corpus: every LoCoMo turn, fresh (uncached) each round."""

from __future__ import annotations

from pathlib import Path

from memlab.dialogues import load_locomo
from memlab.embed import HashingEmbedder
from memlab.eval import retrieval_cases


def test_embed_all_locomo_turns_with_the_default(benchmark, locomo_path: Path) -> None:
    texts = [t for case in retrieval_cases(load_locomo(locomo_path)) for t in case.texts]
    vectors = benchmark(lambda: HashingEmbedder().embed(texts))
    assert vectors.shape == (len(texts), 768) == (4124, 768)
