"""Embedding backends behind one protocol: an offline hashing default, MiniLM, MiniLM distilled static, litellm."""

from memlab.embed.base import CachedEmbedder, Embedder, l2_normalize
from memlab.embed.hashing import HashingEmbedder
from memlab.embed.litellm_embed import LitellmEmbedder
from memlab.embed.minilm import MiniLMEmbedder
from memlab.embed.static import StaticEmbedder

__all__ = [
    "CachedEmbedder",
    "Embedder",
    "HashingEmbedder",
    "LitellmEmbedder",
    "MiniLMEmbedder",
    "StaticEmbedder",
    "l2_normalize",
]
