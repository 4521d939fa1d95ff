"""Embedding backends behind one protocol: an offline hashing default, MiniLM, litellm."""

from memlab.embed.base import CachedEmbedder, Embedder, l2_normalize
from memlab.embed.hashing import HashingEmbedder
from memlab.embed.litellm_embed import LitellmEmbedder
from memlab.embed.minilm import MiniLMEmbedder

__all__ = [
    "CachedEmbedder",
    "Embedder",
    "HashingEmbedder",
    "LitellmEmbedder",
    "MiniLMEmbedder",
    "l2_normalize",
]
