"""Provider embeddings through litellm (OpenAI ``text-embedding-3-small``, Ollama, vLLM, any `api_base`).

Each text's vector is cached on disk under the sha256 of (model, endpoint, params, text), so a
sweep embeds a corpus once; the API key is read like the chat backend's (`api_key_env`), and so
are the values of the headers `headers_env` names: neither is ever part of a key. `dim` must match
what the provider returns (pass ``extra_params: {dimensions: N}`` to have text-embedding-3 models
shorten their vectors).
"""

from __future__ import annotations

import base64
from typing import Any

import numpy as np

from memlab.embed.base import CachedEmbedder
from memlab.llm.base import LLMError
from memlab.llm.cache import ResponseCache, request_key
from memlab.llm.litellm_import import (
    DEFAULT_NUM_RETRIES,
    DEFAULT_RETRY_BACKOFF_S,
    DEFAULT_TIMEOUT_S,
    EMBEDDING_ARGS,
    Provider,
    check_extra_params,
)

DEFAULT_EMBEDDING_DIM = 1536  # text-embedding-3-small
# What a failed embedding call means, first in its one-line error (`memlab run` prints it as it ends). Not a
# fallback: a memory without a vector is missing from every later search, and a query without one retrieves
# nothing, so a skipped embedding would lower retrieval metrics silently; the cache keeps what was embedded.
NO_FALLBACK = (
    "embedder: an embedding call failed and embeddings have no fallback, so the run stops (the cache keeps what was "
    "embedded; raise embedder.num_retries or embedder.retry_backoff_s to outlast an outage)"
)


class LitellmEmbedder(CachedEmbedder):
    """Embeddings from a provider by litellm model name, batched `batch_size` texts per request.

    Args:
        api_key: Parameters: the fields of `memlab.embed.schemas.LitellmEmbedConfig`, each documented there once.
            Besides them: the key itself, from Python only (a config names `api_key_env`, never the key).
    """

    name = "litellm"

    def __init__(
        self,
        model: str = "text-embedding-3-small",
        dim: int = DEFAULT_EMBEDDING_DIM,
        api_base: str | None = None,
        api_key: str | None = None,
        api_key_env: str | None = None,
        timeout: float = DEFAULT_TIMEOUT_S,
        num_retries: int = DEFAULT_NUM_RETRIES,
        retry_backoff_s: float = DEFAULT_RETRY_BACKOFF_S,
        batch_size: int = 128,
        cache_dir: str | None = None,
        extra_params: dict[str, Any] | None = None,
        headers_env: dict[str, str] | None = None,
    ) -> None:
        super().__init__()
        check_extra_params("embedder", extra_params or {}, EMBEDDING_ARGS)
        self.provider = Provider(
            model,
            api_base,
            api_key,
            api_key_env,
            timeout,
            num_retries,
            retry_backoff_s,
            headers_env=dict(headers_env or {}),
            section="embedder",
        )
        self.model = model
        self.dim = dim
        self.batch_size = batch_size
        self.cache = ResponseCache(cache_dir)
        self.extra_params = dict(extra_params or {})

    def _request(self, text: str, endpoint: str | None) -> dict[str, Any]:
        """What determines a text's vector (the cache key's contents); `endpoint`: `Provider.endpoint`."""
        return {"model": self.model, "api_base": endpoint, "params": self.extra_params, "input": text}

    def _embed(self, texts: list[str]) -> np.ndarray:
        rows: dict[str, np.ndarray] = {}
        endpoint = self.provider.endpoint()
        for text in texts:
            hit = self.cache.get(request_key(self._request(text, endpoint)))
            if hit is not None:
                rows[text] = np.frombuffer(base64.b64decode(hit["vector"]), dtype=np.float32)
        missing = [t for t in dict.fromkeys(texts) if t not in rows]
        if missing:
            try:
                response, _ = self.provider.request(
                    "embedding", f"embedding {len(missing)} texts", input=missing, **self.extra_params
                )
            except LLMError as e:
                raise LLMError(f"{NO_FALLBACK}: {e}", attempts=e.attempts) from e
            data = sorted(response.data, key=lambda d: d["index"])
            if len(data) != len(missing):
                raise LLMError(f"{self.model} returned {len(data)} embeddings for {len(missing)} texts")
            for text, item in zip(missing, data, strict=True):
                vector = np.asarray(item["embedding"], dtype=np.float32)
                if vector.shape != (self.dim,):
                    raise LLMError(
                        f"{self.model} returned {vector.shape[0]}-dimensional embeddings but embedder.dim is "
                        f"{self.dim}; set embedder.dim={vector.shape[0]}"
                    )
                rows[text] = vector
                request = self._request(text, endpoint)
                self.cache.put(request_key(request), request, {"vector": base64.b64encode(vector.tobytes()).decode()})
        return np.stack([rows[t] for t in texts])
