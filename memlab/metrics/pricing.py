"""Prices per token from litellm's bundled price table, and the run's cost in US dollars, as a provider bills it.

The table is the file `litellm.model_cost` loads when `LITELLM_LOCAL_MODEL_COST_MAP` is set
(`model_prices_and_context_window_backup.json` in the litellm wheel); it is read directly,
without importing litellm (three seconds), and never from the network.
"""

from __future__ import annotations

import difflib
import functools
import importlib.util
import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memlab.errors import MemlabError
from memlab.metrics.family import metric_family
from memlab.sim.records import CallRecord
from memlab.tokens import get_counter
from memlab.trace import LLM_CALL, Event

PRICE_TABLE_FILE = "model_prices_and_context_window_backup.json"


@dataclass(frozen=True)
class ModelPrice:
    """What one token costs a model's caller, and how many input tokens its window holds.

    Args:
        model: The model's name in litellm's price table.
        input_per_token: Dollars per prompt token.
        output_per_token: Dollars per completion token.
        max_input_tokens: The model's context window in tokens (None: unknown).
    """

    model: str
    input_per_token: float
    output_per_token: float
    max_input_tokens: int | None


@functools.cache
def price_table() -> dict[str, Any]:
    """litellm's bundled price table, keyed by model name."""
    spec = importlib.util.find_spec("litellm")
    if spec is None or not spec.submodule_search_locations:
        raise MemlabError("litellm is not installed; it ships the price table that cost.usd needs")
    path = Path(next(iter(spec.submodule_search_locations))) / PRICE_TABLE_FILE
    table: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return table


def model_price(model: str) -> ModelPrice:
    """The price entry of `model` (the config key `pricing.model`); an unknown name is a user error.

    Args:
        model: A litellm model name.
    """
    entry = price_table().get(model)
    if not isinstance(entry, dict) or "input_cost_per_token" not in entry:
        close = difflib.get_close_matches(model, [k for k in price_table() if k != "sample_spec"], n=3)
        hint = f"; close names: {', '.join(close)}" if close else ""
        raise MemlabError(f"pricing.model={model!r} is not in litellm's price table{hint}")
    window = entry.get("max_input_tokens")
    return ModelPrice(
        model=model,
        input_per_token=float(entry.get("input_cost_per_token") or 0.0),
        output_per_token=float(entry.get("output_cost_per_token") or 0.0),
        max_input_tokens=int(window) if window else None,
    )


def cost_usd(price: ModelPrice, input_tokens: int, output_tokens: int) -> float:
    """Dollars for `input_tokens` sent and `output_tokens` received at `price`.

    Args:
        price: The model's price entry (`model_price`).
        input_tokens: Tokens sent.
        output_tokens: Tokens received.

    >>> cost_usd(ModelPrice("m", 1e-6, 2e-6, None), 1000, 10)
    0.00102
    """
    return input_tokens * price.input_per_token + output_tokens * price.output_per_token


@metric_family
def cost_metrics(calls: Iterable[CallRecord], events: Iterable[Event], price: ModelPrice) -> dict[str, float]:
    """`cost.usd` and its parts, as a provider bills them, and `cost.full_history_usd`.

    - `cost.prompt_usd` / `cost.completion_usd`: every simulated call's prompt and what it produced
      (the reply, or a tool round's tool-call message) at `price`; a call the model answered itself
      (the tool policy asked the provider: `CallRecord.model_call`) at the usage the provider
      reported, at its model's price (`price` when the table does not know it);
    - `cost.aux_usd`: the strategies' own model calls (`aux_cost_usd`);
    - `cost.usd`: the three summed;
    - `cost.full_history_usd`: the whole history sent at every call, at `price`, and the same
      completions (`cost.completion_usd`): the cost of the run without any context strategy.
    """
    prompt_usd = completion_usd = full_usd = 0.0
    for call in calls:
        prompt, completion = call_cost(call, price)
        prompt_usd += prompt
        completion_usd += completion
        full_usd += call.full_tokens * price.input_per_token
    aux_usd = aux_cost_usd(events, price)
    return {
        "cost.usd": prompt_usd + completion_usd + aux_usd,
        "cost.prompt_usd": prompt_usd,
        "cost.completion_usd": completion_usd,
        "cost.aux_usd": aux_usd,
        "cost.full_history_usd": full_usd + completion_usd,
    }


def call_cost(call: CallRecord, price: ModelPrice) -> tuple[float, float]:
    """(prompt, completion) dollars of one simulated call; see `cost_metrics`.

    >>> from memlab.sim.records import CallRecord
    >>> reply = CallRecord("d", "s", 1, None, None, 1, 1, prompt_tokens=1000, full_tokens=1000, completion_tokens=10)
    >>> [round(usd, 9) for usd in call_cost(reply, ModelPrice("m", 1e-6, 2e-6, None))]
    [0.001, 2e-05]
    """
    if call.model_call is None:
        at, prompt, completion = price, call.prompt_tokens, call.completion_tokens
    else:
        billed = call.model_call.data
        at = _known_price(str(billed.get("model") or "")) or price
        prompt, completion = int(billed.get("prompt_tokens") or 0), int(billed.get("completion_tokens") or 0)
    return prompt * at.input_per_token, completion * at.output_per_token


def check_tokenizer(tokenizer: str, pricing_model: str) -> None:
    """Refuse to price one tokenizer's counts at another model's prices (`tokenizer` vs `pricing.model`).

    The pricing model's tokenizer is its tiktoken encoding (gpt-4o-mini: o200k_base), or
    litellm's counter for other providers; `tokenizer` must count the same tokens.

    Args:
        tokenizer: The counter the run's tokens were counted with (config key `tokenizer`).
        pricing_model: The model whose prices apply (config key `pricing.model`).
    """
    counted, billed = get_counter(tokenizer).name, get_counter(pricing_model).name
    if counted != billed:
        raise MemlabError(
            f"tokenizer={tokenizer!r} counts {counted} tokens but pricing.model={pricing_model!r} is billed in "
            f"{billed} tokens, so cost.usd would price one at the other's rates: set tokenizer={billed} "
            f"(or tokenizer=${{pricing.model}}), or a pricing.model whose tokenizer is {counted}"
        )


def aux_cost_usd(events: Iterable[Event], default: ModelPrice) -> float:
    """Dollars of the strategies' own model calls, each at its model's price (`default` when the price
    table does not know the model, as for the offline backends, which stand in for the pricing model).

    Args:
        events: Events of a run's records (`memlab.metrics.all_events`).
        default: The price of a model the table does not know.
    """
    total = 0.0
    for e in events:
        if e.kind == LLM_CALL:
            model = str(e.data.get("model") or "")
            price = _known_price(model) or default
            total += cost_usd(price, int(e.data.get("prompt_tokens") or 0), int(e.data.get("completion_tokens") or 0))
    return total


def unpriced_models(events: Iterable[Event]) -> dict[str, int]:
    """Provider models (``backend: litellm``) that answered calls among `events` but are not in the price table,
    each with its answered calls: `aux_cost_usd` and `call_cost` price those at `pricing.model`'s rates.

    The offline backends are left out: they stand in for the pricing model by design.

    >>> from memlab.trace import Event
    >>> unpriced_models([Event(LLM_CALL, {"backend": "litellm", "model": "my-llama"}),
    ...                  Event(LLM_CALL, {"backend": "litellm", "model": "gpt-4o-mini"}),
    ...                  Event(LLM_CALL, {"backend": "extractive", "model": "extractive"})])
    {'my-llama': 1}
    """
    found: dict[str, int] = {}
    for e in events:
        model = e.data.get("model") if e.kind == LLM_CALL and e.data.get("backend") == "litellm" else None
        if model and _known_price(str(model)) is None:
            found[str(model)] = found.get(str(model), 0) + 1
    return found


@functools.lru_cache(maxsize=64)
def _known_price(model: str) -> ModelPrice | None:
    entry = price_table().get(model)
    return model_price(model) if isinstance(entry, dict) and "input_cost_per_token" in entry else None
