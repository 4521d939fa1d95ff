"""Embedding backends behind one protocol: an offline hashing default, MiniLM, litellm providers."""

from dataclasses import dataclass

from memlab.embed.base import CachedEmbedder, Embedder, l2_normalize
from memlab.embed.hashing import HashingEmbedder


@dataclass
class HashingConfig:
    """`embedder=hashing`: offline, deterministic, no fitting."""

    _target_: str = "memlab.embed.HashingEmbedder"
    dim: int = 384
    seed: int = 0


SCHEMAS = {("embedder", "hashing"): HashingConfig}

__all__ = ["SCHEMAS", "CachedEmbedder", "Embedder", "HashingEmbedder", "l2_normalize"]
