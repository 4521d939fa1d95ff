"""Real providers through litellm: OpenAI, Anthropic, Azure, Ollama, vLLM, any OpenAI-compatible server.

Each distinct request (model, messages, sampling parameters, the endpoint: `api_base`, or the URL
litellm reads from the environment, `Provider.endpoint`; above temperature 0 the run's `seed` too,
sent as the provider's ``seed`` where litellm passes one) is answered once and kept in the on-disk
`ResponseCache`; a repeat is served from disk with `Completion.cached` set, so a sweep never pays
twice; runs sharing the folder take the request's lock first, so two concurrent runs pay once too.
An empty answer is not kept (a retry may do better), and a response without a usable first choice, or
with tool calls when the request offered no tools, is an `LLMError` (a fallback, counted, its billed usage
counted too), never a crash. litellm is imported when its `Provider` is built, so that no call's latency holds
its import. A reply cut off at its token budget
(finish_reason ``length``) is returned, counted (``llm.truncated``) and not kept (`LitellmChatModel._ask`
says why). The API key is read from the environment variable named by `api_key_env` at call time (or
litellm's provider default, e.g. ``OPENAI_API_KEY``), so it never lands in a resolved config or a run
directory, and it is not part of the cache key. The values of the headers `headers_env` names (a
gateway's key) are read the same way and kept out of both; `extra_params` are config values (written
to config.yaml) and part of the key.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from memlab.llm.base import Completion, LLMError, RecordedChatModel
from memlab.llm.cache import ResponseCache, request_key
from memlab.llm.litellm_import import (
    CHAT_ARGS,
    DEFAULT_MAX_RETRY_AFTER_S,
    DEFAULT_NUM_RETRIES,
    DEFAULT_RETRY_BACKOFF_S,
    DEFAULT_TIMEOUT_S,
    Provider,
    check_extra_params,
)
from memlab.messages import Message, MessageLike, ToolCall, as_messages, to_openai
from memlab.tokens import get_counter

# A reply of tool calls to a request that offered no tools: no summary or answer, so a failed call (the strategy
# falls back, `llm.failures` counts it) that is never cached; tool calls are a reply only when tools were offered.
_UNASKED_TOOL_CALLS = "{model}: the reply is {n} tool call(s) but the request offered no tools, so it has no answer"


class LitellmChatModel(RecordedChatModel):
    """A provider model by litellm name (``openai/gpt-4o-mini``, ``anthropic/claude-3-5-haiku-latest``, ...).

    Above temperature 0 a reply is a sample, so the run's `seed` is part of the cache key (a seed sweep draws
    one sample per seed, not the first seed's for all) and is sent as the provider's ``seed`` where litellm
    passes one (OpenAI, vLLM, Ollama; not Anthropic). At temperature 0 it is neither: the keys of caches made
    before stay valid.

    Args:
        api_key: Parameters: the fields of `memlab.llm.schemas.LitellmConfig`, each documented there once. Besides
            them: the key itself, from Python only (a config names `api_key_env`, never the key).
    """

    name = "litellm"
    supports_tools = True  # `complete(..., tools=[...])` returns the model's tool calls

    def __init__(
        self,
        model: str,
        api_base: str | None = None,
        api_key: str | None = None,
        api_key_env: str | None = None,
        temperature: float = 0.0,
        max_tokens: int = 512,
        timeout: float = DEFAULT_TIMEOUT_S,
        num_retries: int = DEFAULT_NUM_RETRIES,
        retry_backoff_s: float = DEFAULT_RETRY_BACKOFF_S,
        max_retry_after_s: float = DEFAULT_MAX_RETRY_AFTER_S,
        cache_dir: str | None = None,
        counter: str = "cl100k_base",
        extra_params: dict[str, Any] | None = None,
        headers_env: dict[str, str] | None = None,
        seed: int = 0,
    ) -> None:
        check_extra_params("llm", extra_params or {}, CHAT_ARGS)
        headers = dict(headers_env or {})
        self.provider = Provider(
            model, api_base, api_key, api_key_env, timeout, num_retries, retry_backoff_s, max_retry_after_s, headers
        )
        self.model = model
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.cache = ResponseCache(cache_dir)
        self.counter = counter
        self.extra_params = dict(extra_params or {})
        self.seed = seed

    def _secrets(self) -> tuple[str, ...]:
        return self.provider.secrets()

    def _complete(
        self, messages: Sequence[MessageLike], *, task: str, max_tokens: int | None, **params: Any
    ) -> Completion:
        msgs = as_messages(messages)
        wire = to_openai(msgs)
        sampling = {"temperature": self.temperature, "max_tokens": max_tokens or self.max_tokens, **self.extra_params}
        sampling.update(params)
        request: dict[str, Any] = {"model": self.model, "api_base": self.provider.endpoint(), "messages": wire}
        request["params"] = sampling
        # A sample: each run seed draws and keeps its own (at 0, the keys of older caches stay valid); an
        # extra_params seed is the user's own, sent and keyed as it is.
        if float(sampling.get("temperature") or 0) > 0 and "seed" not in sampling:
            request["seed"] = self.seed
        key = request_key(request)
        hit = _usable(self.cache.get(key), sampling)
        if hit is None:
            with self.cache.lock(key):  # another run may be asking the same right now: wait, then reuse its answer
                hit = _usable(self.cache.get(key), sampling)
                if hit is None:
                    return self._ask(key, request, msgs, wire, task, sampling)
        calls = tuple(ToolCall.from_openai(c) for c in hit.get("tool_calls") or ())
        return Completion(
            hit["text"],
            hit["prompt_tokens"],
            hit["completion_tokens"],
            hit["model"],
            cached=True,
            tool_calls=calls,
            attempts=0,
        )

    def _ask(
        self,
        key: str,
        request: dict[str, Any],
        msgs: Sequence[Message],
        wire: list[dict[str, Any]],
        task: str,
        sampling: dict[str, Any],
    ) -> Completion:
        """Ask the provider, and keep the reply unless it is empty or cut off.

        A reply cut off at its token budget (finish_reason ``length``) is returned with `Completion.truncated`
        set (the ``llm.truncated`` metric counts it) and is not refused: the strategy asked for at most that many
        tokens and the provider answered within them, so a summary cut mid-sentence is still the model's summary
        for that budget. Refusing it would swap in the strategy's non-model fallback at every tight budget and
        blend the fallback's quality into the model's numbers; counted, a report shows how often the budget cut
        the model short. Output its caller cannot use (a cut JSON extraction) fails the caller's own checks and
        falls back as any bad output does. It is not cached, so that no later run is served it as a whole reply.
        """
        sent = dict(sampling)
        if "seed" in request and self.provider.accepts("seed"):  # Anthropic's API has no seed
            sent["seed"] = request["seed"]
        response, attempts = self.provider.request("completion", task, messages=wire, **sent)
        usage = getattr(response, "usage", None)
        billed = Completion(  # what the provider reports it billed (0: it did not say)
            "",
            int(getattr(usage, "prompt_tokens", 0) or 0),
            int(getattr(usage, "completion_tokens", 0) or 0),
            str(getattr(response, "model", None) or self.model),
        )
        try:
            text = answer_text(response, self.model)
            tool_calls = tuple(_tool_call(c) for c in getattr(response.choices[0].message, "tool_calls", None) or ())
            if tool_calls and not sampling.get("tools"):
                raise LLMError(_UNASKED_TOOL_CALLS.format(model=self.model, n=len(tool_calls)))
        except LLMError as e:  # no usable reply, but the provider may have billed it: its usage is counted
            raise LLMError(str(e), attempts=attempts, billed=billed) from None
        truncated = getattr(response.choices[0], "finish_reason", None) == "length"
        counter = get_counter(self.counter)
        completion = Completion(
            text=text,
            prompt_tokens=billed.prompt_tokens or counter.count_request(msgs),
            completion_tokens=billed.completion_tokens or counter.count_text(text),
            model=billed.model,
            tool_calls=tool_calls,
            truncated=truncated,
            attempts=attempts,
        )
        if (text.strip() or tool_calls) and not truncated:  # not kept, empty or cut off: the next run asks again
            stored = {k: getattr(completion, k) for k in ("text", "prompt_tokens", "completion_tokens", "model")}
            stored["tool_calls"] = [c.to_openai() for c in tool_calls]
            self.cache.put(key, request, stored)
        return completion


def _usable(hit: dict[str, Any] | None, sampling: dict[str, Any]) -> dict[str, Any] | None:
    """A cached reply, or None when it is tool calls to a request that offered no tools (caches written before such a
    reply was refused, `_UNASKED_TOOL_CALLS`, hold them): asked again, so that the cache heals instead of replaying
    them as empty answers."""
    if hit is not None and hit.get("tool_calls") and not sampling.get("tools"):
        return None
    return hit


def _tool_call(raw: Any) -> ToolCall:
    """A litellm tool call (an object with ``id`` and ``function.name|arguments``) as a `ToolCall`."""
    fn = getattr(raw, "function", None)
    return ToolCall(
        id=str(getattr(raw, "id", "") or ""),
        name=str(getattr(fn, "name", "") or ""),
        arguments=str(getattr(fn, "arguments", None) or "{}"),
    )


def answer_text(response: Any, model: str) -> str:
    """The first choice's text; a response without one (``choices: []``, no message) is an `LLMError`."""
    try:
        content = response.choices[0].message.content
    except (AttributeError, IndexError, KeyError, TypeError):
        raise LLMError(f"{model}: malformed response without a first choice's message") from None
    if content is not None and not isinstance(content, str):
        raise LLMError(f"{model}: malformed response: message content is {type(content).__name__}, not text")
    return content or ""
