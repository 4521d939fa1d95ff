"""Prices per token from litellm's bundled price table, and the run's cost in US dollars.

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
    """What one token costs a model's caller, and how many input tokens its window holds."""

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
    """The price entry of `model` (the config key `pricing.model`); an unknown name is a user error."""
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

    >>> cost_usd(ModelPrice("m", 1e-6, 2e-6, None), 1000, 10)
    0.00102
    """
    return input_tokens * price.input_per_token + output_tokens * price.output_per_token


@metric_family
def cost_metrics(calls: Iterable[CallRecord], events: Iterable[Event], price: ModelPrice) -> dict[str, float]:
    """`cost.usd` (the simulated prompts at `price`, each auxiliary call at its own model's price) and
    `cost.full_history_usd` (sending the whole history at every call, at `price`)."""
    calls = list(calls)
    prompt_total = sum(c.prompt_tokens for c in calls)
    full_total = sum(c.full_tokens for c in calls)
    return {
        "cost.usd": cost_usd(price, prompt_total, 0) + aux_cost_usd(events, price),
        "cost.full_history_usd": cost_usd(price, full_total, 0),
    }


def check_tokenizer(tokenizer: str, pricing_model: str) -> None:
    """Refuse to price one tokenizer's counts at another model's prices (`tokenizer` vs `pricing.model`).

    The pricing model's tokenizer is its tiktoken encoding (gpt-4o-mini: o200k_base), or
    litellm's counter for other providers; `tokenizer` must count the same tokens.
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
    table does not know the model, as for the offline backends, which stand in for the pricing model)."""
    total = 0.0
    for e in events:
        if e.kind == LLM_CALL:
            model = str(e.data.get("model") or "")
            price = _known_price(model) or default
            total += cost_usd(price, int(e.data.get("prompt_tokens") or 0), int(e.data.get("completion_tokens") or 0))
    return total


@functools.lru_cache(maxsize=64)
def _known_price(model: str) -> ModelPrice | None:
    entry = price_table().get(model)
    return model_price(model) if isinstance(entry, dict) and "input_cost_per_token" in entry else None
