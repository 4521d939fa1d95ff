"""Real providers through litellm: OpenAI, Anthropic, Azure, Ollama, vLLM, any OpenAI-compatible server.

Each distinct request (model, messages, sampling parameters, api_base) is answered once and
kept in the on-disk `ResponseCache`; a repeat is served from disk with `Completion.cached`
set, so a sweep never pays twice. The API key is read from the environment variable named by
`api_key_env` at call time (or litellm's provider default, e.g. ``OPENAI_API_KEY``), so it never
lands in a resolved config or a run directory, and it is not part of the cache key.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from memlab.llm.base import Completion, LLMError, RecordedChatModel
from memlab.llm.cache import ResponseCache, request_key
from memlab.llm.litellm_import import call
from memlab.messages import MessageLike, as_messages, to_openai
from memlab.tokens import get_counter


def api_key_from(api_key: str | None, api_key_env: str | None) -> str | None:
    """An explicit key, else the named environment variable's value (an unset variable is an error)."""
    if api_key is not None or api_key_env is None:
        return api_key
    value = os.environ.get(api_key_env)
    if value is None:
        raise LLMError(f"api_key_env names {api_key_env!r}, which is not set; export it or set api_key_env: null")
    return value


class LitellmChatModel(RecordedChatModel):
    """A provider model by litellm name (``openai/gpt-4o-mini``, ``anthropic/claude-3-5-haiku-latest``, ...)."""

    name = "litellm"

    def __init__(
        self,
        model: str,
        api_base: str | None = None,
        api_key: str | None = None,
        api_key_env: str | None = None,
        temperature: float = 0.0,
        max_tokens: int = 512,
        timeout: float = 60.0,
        num_retries: int = 2,
        retry_backoff_s: float = 1.0,
        cache_dir: str | None = None,
        counter: str = "cl100k_base",
        extra_params: dict[str, Any] | None = None,
    ) -> None:
        self.model = model
        self.api_base = api_base
        self._api_key = api_key
        self.api_key_env = api_key_env
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.timeout = timeout
        self.num_retries = num_retries
        self.retry_backoff_s = retry_backoff_s
        self.cache = ResponseCache(cache_dir)
        self.counter = counter
        self.extra_params = dict(extra_params or {})

    def _complete(
        self, messages: Sequence[MessageLike], *, task: str, max_tokens: int | None, **params: Any
    ) -> Completion:
        msgs = as_messages(messages)
        wire = to_openai(msgs)
        sampling = {"temperature": self.temperature, "max_tokens": max_tokens or self.max_tokens, **self.extra_params}
        sampling.update(params)
        request = {"model": self.model, "api_base": self.api_base, "messages": wire, "params": sampling}
        key = request_key(request)
        hit = self.cache.get(key)
        if hit is not None:
            return Completion(hit["text"], hit["prompt_tokens"], hit["completion_tokens"], hit["model"], cached=True)
        api_key = api_key_from(self._api_key, self.api_key_env)
        response = call(
            lambda litellm: litellm.completion(
                model=self.model,
                messages=wire,
                api_base=self.api_base,
                api_key=api_key,
                timeout=self.timeout,
                max_retries=0,  # retries are ours (memlab.llm.litellm_import.call), so they are counted and bounded
                **sampling,
            ),
            num_retries=self.num_retries,
            retry_backoff_s=self.retry_backoff_s,
            what=f"{self.model} ({task})",
        )
        text = response.choices[0].message.content or ""
        usage = getattr(response, "usage", None)
        counter = get_counter(self.counter)
        completion = Completion(
            text=text,
            prompt_tokens=int(getattr(usage, "prompt_tokens", 0) or counter.count_request(msgs)),
            completion_tokens=int(getattr(usage, "completion_tokens", 0) or counter.count_text(text)),
            model=str(getattr(response, "model", None) or self.model),
        )
        stored = {k: getattr(completion, k) for k in ("text", "prompt_tokens", "completion_tokens", "model")}
        self.cache.put(key, request, stored)
        return completion
