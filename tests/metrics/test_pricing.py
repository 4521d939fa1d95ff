"""cost.usd from litellm's bundled price table; the table read directly equals `litellm.model_cost`."""

from __future__ import annotations

import pytest
from hand_made import call

from memlab.errors import MemlabError
from memlab.llm.litellm_import import import_litellm
from memlab.metrics import compute_metrics, cost_usd, model_price
from memlab.trace import LLM_CALL, Event


@pytest.mark.parametrize("model", ["gpt-4o-mini", "claude-haiku-4-5"])
def test_price_table_is_litellms_model_cost(model: str) -> None:
    entry = import_litellm().model_cost[model]
    price = model_price(model)
    assert price.input_per_token == entry["input_cost_per_token"]
    assert price.output_per_token == entry["output_cost_per_token"]
    assert price.max_input_tokens == entry["max_input_tokens"]


def test_run_cost_prices_prompts_and_auxiliary_calls() -> None:
    price = model_price("gpt-4o-mini")
    records = [
        call(1000, 1000),
        call(3000, 5000, Event(LLM_CALL, {"prompt_tokens": 400, "completion_tokens": 100})),
    ]
    m = compute_metrics(records, pricing_model="gpt-4o-mini")
    expected = 4400 * price.input_per_token + 100 * price.output_per_token
    assert m["cost.usd"] == pytest.approx(expected, rel=1e-12)
    assert cost_usd(price, 4400, 100) == pytest.approx(expected, rel=1e-12)


def test_unknown_pricing_model_names_the_key_and_close_names() -> None:
    with pytest.raises(MemlabError, match=r"pricing\.model='gpt-4o-mimi'.*gpt-4o-mini"):
        model_price("gpt-4o-mimi")


def test_context_window_defaults_to_the_pricing_models_input_limit() -> None:
    window = model_price("gpt-4o-mini").max_input_tokens
    assert window is not None
    records = [call(window, window), call(window + 1, window + 1)]
    assert compute_metrics(records, pricing_model="gpt-4o-mini")["budget.violations"] == 1
    assert compute_metrics(records, pricing_model="gpt-4o-mini", context_window=100)["budget.violations"] == 2
