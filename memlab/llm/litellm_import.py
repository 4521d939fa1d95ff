"""The one place memlab imports and calls litellm: lazily, offline, with retries and mapped errors.

litellm takes seconds to import and otherwise fetches a price map from the network, so it is
imported on first use with its bundled map. `call` retries what a provider may get right on
a second try (timeouts, connection errors, 408/409/429 and 5xx answers) with exponential
backoff, and turns every provider error into `LLMError` (a timeout into `LLMTimeout`).
"""

from __future__ import annotations

import functools
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from memlab.llm.base import LLMError, LLMTimeout

RETRY_STATUS = frozenset({408, 409, 429})  # and every 5xx


@functools.cache
def import_litellm() -> ModuleType:
    """Import litellm without network access (it otherwise fetches a price map) and only when used."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    os.environ.setdefault("LITELLM_TELEMETRY", "False")
    import litellm

    litellm.telemetry = False
    litellm.suppress_debug_info = True
    return litellm


def _retryable(error: Exception, litellm: ModuleType) -> bool:
    if isinstance(error, litellm.exceptions.Timeout | litellm.exceptions.APIConnectionError):
        return True
    status = getattr(error, "status_code", None)
    return isinstance(status, int) and (status in RETRY_STATUS or status >= 500)


def call(function: Callable[[ModuleType], Any], *, num_retries: int, retry_backoff_s: float, what: str) -> Any:
    """`function(litellm)`, retried up to `num_retries` times; provider errors become `LLMError`.

    The n-th retry waits ``retry_backoff_s * 2**(n-1)`` seconds. `what` names the request in errors.
    """
    litellm = import_litellm()
    import openai  # litellm's dependency; its OpenAIError is the base of every litellm provider exception

    attempt = 0
    while True:
        try:
            return function(litellm)
        except openai.OpenAIError as e:
            if attempt < num_retries and _retryable(e, litellm):
                time.sleep(retry_backoff_s * 2**attempt)
                attempt += 1
                continue
            tries = f"after {attempt + 1} attempt{'s' if attempt else ''}"
            if isinstance(e, litellm.exceptions.Timeout):
                raise LLMTimeout(f"{what} timed out {tries}: {e}") from e
            raise LLMError(f"{what} failed {tries}: {type(e).__name__}: {e}") from e


@dataclass(frozen=True)
class Provider:
    """Where and how to reach one provider model; shared by the chat and embedding backends.

    The API key is read from the environment variable named by `api_key_env` at call time (or
    litellm's provider default, e.g. ``OPENAI_API_KEY``), so it never lands in a resolved config.
    """

    model: str
    api_base: str | None = None
    api_key: str | None = None
    api_key_env: str | None = None
    timeout: float = 60.0
    num_retries: int = 2
    retry_backoff_s: float = 1.0

    def resolved_api_key(self) -> str | None:
        """An explicit key, else the named environment variable's value (an unset variable is an error)."""
        if self.api_key is not None or self.api_key_env is None:
            return self.api_key
        value = os.environ.get(self.api_key_env)
        if value is None:
            raise LLMError(
                f"api_key_env names {self.api_key_env!r}, which is not set; export it or set api_key_env: null"
            )
        return value

    def request(self, endpoint: str, what: str, **kwargs: Any) -> Any:
        """``litellm.<endpoint>(model=..., **kwargs)`` with this provider's settings, through `call`."""
        api_key = self.resolved_api_key()
        return call(
            lambda litellm: getattr(litellm, endpoint)(
                model=self.model,
                api_base=self.api_base,
                api_key=api_key,
                timeout=self.timeout,
                max_retries=0,  # retries are ours (`call`), so they are counted and bounded
                **kwargs,
            ),
            num_retries=self.num_retries,
            retry_backoff_s=self.retry_backoff_s,
            what=f"{self.model} ({what})",
        )
