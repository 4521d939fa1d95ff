"""The one place memlab calls litellm (imported by `memlab.litellm_offline`): with retries and mapped errors.

`call` retries what a provider may get right on a second try (timeouts, connection errors,
408/409/429 and 5xx answers) with exponential backoff, or after the server's ``Retry-After`` when
it sends one (at most `max_retry_after_s`), and turns every provider error into `LLMError` (a
timeout into `LLMTimeout`). Missing or refused credentials are never retried: they raise
`LLMAuthError`, which stops the run with one line naming the environment variable to set,
instead of failing every call of a long run. So does a model that has not answered once in the run
when, its retries spent, no server took the connection or the server has no such model or path (404):
`LLMUnavailable`, naming the URL (an outage or a typo would otherwise run to the end on fallbacks).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from email.utils import parsedate_to_datetime
from types import ModuleType
from typing import Any

from memlab.errors import MemlabError
from memlab.litellm_offline import import_litellm
from memlab.llm.base import LLMAuthError, LLMError, LLMTimeout, LLMUnavailable, invalid_response, one_line, redact

RETRY_STATUS = frozenset({408, 409, 429})  # and every 5xx
DEFAULT_TIMEOUT_S = 60.0  # a request's seconds
DEFAULT_NUM_RETRIES = 2
DEFAULT_RETRY_BACKOFF_S = 1.0  # before the first retry, doubled at each further one
DEFAULT_MAX_RETRY_AFTER_S = 60.0
# What providers (through litellm) say when no key reached them; litellm reports it as a 500.
_MISSING_KEY = ("missing credentials", "api_key client option must be set", "no api key", "api key not found")
# The keyword arguments memlab passes to litellm itself, each with what to set instead ({section}: llm, embedder):
# in `extra_params` they were passed twice (a TypeError mid-run) or silently overrode memlab's own setting.
_PROVIDER_ARGS = {
    "model": "set {section}.model",
    "api_base": "set {section}.api_base",
    "base_url": "set {section}.api_base",  # litellm's other name for api_base
    "api_key": "name the variable holding the key in {section}.api_key_env",
    "timeout": "set {section}.timeout",
    "max_retries": "set {section}.num_retries (memlab retries, litellm does not)",
    "num_retries": "set {section}.num_retries (memlab retries, litellm does not)",
}
CHAT_ARGS = {
    **_PROVIDER_ARGS,
    "messages": "the messages are the strategy's prompt",
    "temperature": "set {section}.temperature",
    "max_tokens": "set {section}.max_tokens (a strategy's own max_tokens wins over it)",
}
EMBEDDING_ARGS = {**_PROVIDER_ARGS, "input": "the inputs are the texts embedded"}

# The environment variables litellm's request handlers read for a provider's URL when no api_base is given and
# `get_llm_provider` found none (litellm/main.py), the first one set winning; any other provider's is
# <PROVIDER>_API_BASE (HOSTED_VLLM_API_BASE, LM_STUDIO_API_BASE, OPENROUTER_API_BASE, GEMINI_API_BASE, ...).
_OPENAI_BASE = ("OPENAI_BASE_URL", "OPENAI_API_BASE")
BASE_VARIABLES = {
    "openai": _OPENAI_BASE,
    "custom_openai": _OPENAI_BASE,
    "text-completion-openai": _OPENAI_BASE,
    "anthropic": ("ANTHROPIC_API_BASE", "ANTHROPIC_BASE_URL"),
    "azure": ("AZURE_API_BASE",),
    "azure_text": ("AZURE_API_BASE",),
    "ollama_chat": ("OLLAMA_API_BASE",),
    "vertex_ai": ("VERTEXAI_API_BASE", "VERTEX_API_BASE"),
}


class ExtraParamsError(MemlabError):
    """A key of `extra_params` that memlab passes to litellm itself."""


def extra_params_problem(section: str, keys: Iterable[object], claimed: Mapping[str, str]) -> str | None:
    """Why `section.extra_params` may not hold one of `keys` (its first key in `claimed`), or None.

    Names the key and the setting to use instead, never the value (an ``api_key`` given there is a secret).
    """
    for key in keys:
        if str(key) in claimed:
            instead = claimed[str(key)].format(section=section)
            return f"{section}.extra_params.{key}: memlab passes {key} to litellm itself; {instead}"
    return None


def unset_header_variable(section: str, headers_env: Mapping[str, str]) -> str | None:
    """Why a header of `section.headers_env` (header name -> environment variable) has no value, or None."""
    for header, variable in headers_env.items():
        if os.environ.get(variable) is None:
            return f"{section}.headers_env.{header} names {variable}, which is not set; export it"
    return None


def check_extra_params(section: str, extra_params: Mapping[str, Any], claimed: Mapping[str, str]) -> None:
    """Raise `ExtraParamsError` (one line, status 2) when `extra_params` holds a key memlab passes itself."""
    problem = extra_params_problem(section, extra_params, claimed)
    if problem is not None:
        raise ExtraParamsError(problem)


def _retryable(error: Exception, litellm: ModuleType) -> bool:
    """A timeout, a lost connection, 408/409/429 or a 5xx; not a 200 reply litellm could not read, which it reports
    as a 500 (`invalid_response`: the same request gets the same malformed body or stream)."""
    if invalid_response(error):
        return False
    if isinstance(error, litellm.exceptions.Timeout | litellm.exceptions.APIConnectionError):
        return True
    status = getattr(error, "status_code", None)
    return isinstance(status, int) and (status in RETRY_STATUS or status >= 500)


def retry_after(error: Exception) -> float | None:
    """The server's ``Retry-After`` in seconds (a number or an HTTP date), None when it sent none."""
    response = getattr(error, "response", None)
    headers = getattr(response, "headers", None) or getattr(error, "litellm_response_headers", None)
    value = headers.get("retry-after") if headers is not None else None
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        return max(0.0, parsedate_to_datetime(value).timestamp() - time.time())
    except (TypeError, ValueError):
        return None


def _auth_failure(error: Exception, litellm: ModuleType) -> bool:
    if isinstance(error, litellm.exceptions.AuthenticationError) or getattr(error, "status_code", None) == 401:
        return True
    text = str(error).lower()
    return any(phrase in text for phrase in _MISSING_KEY)


def unreachable(error: BaseException) -> bool:
    """Whether `error` says the endpoint cannot serve any request: no server took the connection (httpx's
    ``ConnectError`` in its chain: refused, unknown host; litellm reports it as a 500 "Connection error."), or
    the server has no such model or path (HTTP 404). A timeout or a connection dropped mid-answer is neither."""
    import httpx  # litellm's and openai's HTTP client

    if getattr(error, "status_code", None) == 404:
        return True
    seen: BaseException | None = error
    for _ in range(32):  # a chain is a few links; a cycle ends here
        if seen is None:
            return False
        if isinstance(seen, httpx.ConnectError):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def call(
    function: Callable[[ModuleType], Any],
    *,
    num_retries: int,
    retry_backoff_s: float,
    what: str,
    max_retry_after_s: float = DEFAULT_MAX_RETRY_AFTER_S,
    on_auth_error: Callable[[Exception], LLMAuthError] | None = None,
    on_unreachable: Callable[[Exception], LLMUnavailable] | None = None,
) -> tuple[Any, int]:
    """`function(litellm)` and the attempts it took, retried up to `num_retries` times; provider errors become
    `LLMError`, whose `attempts` says how many requests were sent.

    The n-th retry waits ``retry_backoff_s * 2**(n-1)`` seconds, or the server's ``Retry-After``
    when longer (capped at `max_retry_after_s`). `what` names the request in errors. A credentials
    failure is not retried: it raises `on_auth_error(error)` (default: an `LLMAuthError`). With
    `on_unreachable`, a failure that is `unreachable` once the retries are spent raises `on_unreachable(error)`.
    """
    litellm = import_litellm()
    import openai  # litellm's dependency; its OpenAIError is the base of every litellm provider exception

    attempt = 0
    while True:
        try:
            return function(litellm), attempt + 1
        except openai.OpenAIError as e:
            if _auth_failure(e, litellm):
                if on_auth_error is not None:
                    raise on_auth_error(e) from None
                raise LLMAuthError(f"{what}: the provider refused the credentials ({one_line(str(e))})") from None
            if attempt < num_retries and _retryable(e, litellm):
                hint = retry_after(e)
                wait = retry_backoff_s * 2**attempt
                time.sleep(min(max(wait, hint), max_retry_after_s) if hint is not None else wait)
                attempt += 1
                continue
            tries = f"after {attempt + 1} attempt{'s' if attempt else ''}"
            if on_unreachable is not None and unreachable(e):
                raise on_unreachable(e) from None
            if isinstance(e, litellm.exceptions.Timeout):
                raise LLMTimeout(f"{what} timed out {tries}: {e}", attempts=attempt + 1) from e
            raise LLMError(f"{what} failed {tries}: {type(e).__name__}: {e}", attempts=attempt + 1) from e


class _NoRetries(int):
    """0 that is true: litellm's OpenAI embedding path reads ``max_retries or DEFAULT_MAX_RETRIES``, so a plain 0
    became the OpenAI client's 2 retries, hidden from memlab's count (num_retries=0 sent 3 requests)."""

    def __bool__(self) -> bool:
        return True


NO_RETRIES = _NoRetries(0)


@dataclass
class _Answered:
    """The (model, api_base) pairs of a provider and its `dataclasses.replace` copies that have answered once in this
    run (mutable inside the frozen `Provider`): a copy with another setting (timeout, retries) of the same model at
    the same URL has answered too; a copy for another model or URL has not."""

    seen: set[tuple[str, str | None]] = field(default_factory=set)


@dataclass(frozen=True)
class Provider:
    """Where and how to reach one provider model; shared by the chat and embedding backends.

    The API key is read from the environment variable named by `api_key_env` at call time (or
    litellm's provider default, e.g. ``OPENAI_API_KEY``), so it never lands in a resolved config;
    so are the values of the headers `headers_env` names (a gateway's key: Azure APIM, Portkey).
    `section` (llm, embedder) is the config node its errors name. `answered` records whether the provider has
    answered a `request` once in this run (`request` sets it); a `dataclasses.replace` copy shares it, which counts a
    copy as answered only for the same model and `api_base` (`_Answered`), and it plays no part in equality.
    """

    model: str
    api_base: str | None = None
    api_key: str | None = None
    api_key_env: str | None = None
    timeout: float = DEFAULT_TIMEOUT_S
    num_retries: int = DEFAULT_NUM_RETRIES
    retry_backoff_s: float = DEFAULT_RETRY_BACKOFF_S
    max_retry_after_s: float = DEFAULT_MAX_RETRY_AFTER_S
    headers_env: Mapping[str, str] = field(default_factory=dict)
    section: str = "llm"
    answered: _Answered = field(default_factory=_Answered, compare=False, repr=False)

    def __post_init__(self) -> None:
        import_litellm()  # here, once (seconds), not in a first call's latency: latency.model is the answer's time

    def key_variables(self) -> list[str]:
        """The environment variables that would give this provider its key (for error messages)."""
        if self.api_key_env is not None:
            return [self.api_key_env]
        try:
            found = import_litellm().validate_environment(model=self.model).get("missing_keys") or []
        except Exception:  # an unknown provider: litellm cannot tell
            found = []
        return [str(k) for k in found]

    def auth_error(self, error: Exception) -> LLMAuthError:
        """One line: which model refused the credentials and which variable to set."""
        names = self.key_variables()
        fix = (
            f"set {' or '.join(names)}" if names else "set the provider's API key (llm.api_key_env names the variable)"
        )
        if self.api_key is not None:
            fix = "check llm.api_key"
        return LLMAuthError(f"llm: {self.model}: authentication failed; {fix} ({one_line(str(error))})")

    def unavailable(self, error: Exception) -> LLMUnavailable:
        """One line: which model could not be reached where, and that the run stops rather than fall back."""
        where = self.endpoint() or "the provider's default URL"
        what = "not served" if getattr(error, "status_code", None) == 404 else "unreachable"
        return LLMUnavailable(
            f"{self.section}: {self.model} at {where} is {what} (it has not answered once in this run), so the run "
            f"stops: check {self.section}.api_base and {self.section}.model, or start the server "
            f"({one_line(redact(str(error), self.secrets()))})"
        )

    def resolved_api_key(self) -> str | None:
        """An explicit key, else the named environment variable's value (an unset variable is an error)."""
        if self.api_key is not None or self.api_key_env is None:
            return self.api_key
        value = os.environ.get(self.api_key_env)
        if value is None:
            raise LLMAuthError(
                f"llm: {self.model}: api_key_env names {self.api_key_env}, which is not set; "
                "export it or set api_key_env: null"
            )
        return value

    def endpoint(self) -> str | None:
        """The URL litellm sends this provider's requests to; None: the provider's own default.

        `api_base`, else what litellm finds in the environment: the URL `get_llm_provider` resolves (groq,
        ollama, ...), else the provider's variable (`BASE_VARIABLES`: ``OPENAI_BASE_URL`` or ``OPENAI_API_BASE``
        for openai/ models). Part of the cache key, so that runs against two servers never share answers.
        Without `api_base` it imports litellm, even for a request the cache answers.
        """
        if self.api_base:
            return self.api_base
        litellm = import_litellm()
        try:
            _, provider, _, found = litellm.get_llm_provider(self.model)
        except Exception:  # a model litellm cannot route: its request fails with litellm's own message
            return None
        if found or litellm.api_base:
            return str(found or litellm.api_base)
        names = BASE_VARIABLES.get(provider, (f"{provider.upper().replace('-', '_')}_API_BASE",))
        return next((os.environ[name] for name in names if os.environ.get(name)), None)

    def accepts(self, param: str) -> bool:
        """Whether litellm passes the OpenAI parameter `param` on to this provider (else it refuses the request)."""
        litellm = import_litellm()
        try:
            model, provider, _, _ = litellm.get_llm_provider(self.model)
            return param in (litellm.get_supported_openai_params(model=model, custom_llm_provider=provider) or ())
        except Exception:  # a model litellm cannot route: its request fails with litellm's own message
            return False

    def secrets(self) -> tuple[str, ...]:
        """What this provider sends that no record may repeat: the key, and the `headers_env` headers' values
        (as set now; an unset variable is no secret yet)."""
        named = [self.api_key_env, *self.headers_env.values()]
        return tuple(v for v in (self.api_key, *(os.environ.get(n) for n in named if n)) if v)

    def resolved_headers(self) -> dict[str, str]:
        """The `headers_env` headers with their variables' values now (an unset variable is an error)."""
        problem = unset_header_variable(self.section, self.headers_env)
        if problem is not None:
            raise LLMAuthError(problem)
        return {header: os.environ[variable] for header, variable in self.headers_env.items()}

    def request(self, endpoint: str, what: str, **kwargs: Any) -> tuple[Any, int]:
        """``litellm.<endpoint>(model=..., **kwargs)`` with this provider's settings, through `call`, and the attempts
        it took.

        The `headers_env` headers join an ``extra_headers`` of `kwargs` (a header in both takes the variable's value).
        Until the provider has `answered` once, an `unreachable` failure raises `LLMUnavailable` (the run stops)
        instead of `LLMError` (a fallback). Once it has answered, such a failure is a passing outage, and the call
        fails as any other (the strategy falls back).
        """
        api_key = self.resolved_api_key()
        headers = {**(kwargs.pop("extra_headers", None) or {}), **self.resolved_headers()}
        if headers:
            kwargs["extra_headers"] = headers
        response, attempts = call(
            lambda litellm: getattr(litellm, endpoint)(
                model=self.model,
                api_base=self.api_base,
                api_key=api_key,
                timeout=self.timeout,
                max_retries=NO_RETRIES,  # retries are ours (`call`), so they are counted and bounded
                **kwargs,
            ),
            num_retries=self.num_retries,
            retry_backoff_s=self.retry_backoff_s,
            what=f"{self.model} ({what})",
            max_retry_after_s=self.max_retry_after_s,
            on_auth_error=self.auth_error,
            on_unreachable=None if (self.model, self.api_base) in self.answered.seen else self.unavailable,
        )
        self.answered.seen.add((self.model, self.api_base))
        return response, attempts
