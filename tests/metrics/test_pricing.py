"""cost.usd from litellm's bundled price table; the table read directly equals `litellm.model_cost`."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from hand_made import call

from memlab.errors import MemlabError
from memlab.experiment import load_dialogues, run_experiment
from memlab.litellm_offline import import_litellm
from memlab.metrics import aux_cost_usd, check_tokenizer, compute_metrics, cost_usd, model_price
from memlab.tokens import get_counter, load_encoding
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
    expected = 4400 * price.input_per_token + 100 * price.output_per_token  # hand-made calls produced nothing
    assert m["cost.usd"] == pytest.approx(expected, rel=1e-12)
    assert cost_usd(price, 4400, 100) == pytest.approx(expected, rel=1e-12)


def test_every_call_is_priced_with_what_it_produced_and_a_call_the_provider_answered_as_billed() -> None:
    mini, big = model_price("gpt-4o-mini"), model_price("gpt-4o")
    billed = Event(LLM_CALL, {"model": "gpt-4o", "task": "chat", "prompt_tokens": 3100, "completion_tokens": 7})
    records = [
        replace(call(1000, 1000), completion_tokens=50),
        replace(
            call(3000, 5000, Event(LLM_CALL, {"prompt_tokens": 400, "completion_tokens": 100})),
            completion_tokens=20,  # the reply in the data; the provider billed its own 7
            model_call=billed,
        ),
    ]
    m = compute_metrics(records, pricing_model="gpt-4o-mini")
    prompt = 1000 * mini.input_per_token + 3100 * big.input_per_token
    completion = 50 * mini.output_per_token + 7 * big.output_per_token
    aux = 400 * mini.input_per_token + 100 * mini.output_per_token
    assert (m["cost.prompt_usd"], m["cost.completion_usd"], m["cost.aux_usd"]) == pytest.approx(
        (prompt, completion, aux), rel=1e-12
    )
    assert m["cost.usd"] == pytest.approx(prompt + completion + aux, rel=1e-12)
    assert m["cost.full_history_usd"] == pytest.approx(6000 * mini.input_per_token + completion, rel=1e-12)
    assert m["tokens.completion.total"] == 70 and m["tokens.aux.total"] == 500  # the billed call is not auxiliary


def test_unknown_pricing_model_names_the_key_and_close_names() -> None:
    with pytest.raises(MemlabError, match=r"pricing\.model='gpt-4o-mimi'.*gpt-4o-mini"):
        model_price("gpt-4o-mimi")


def test_context_window_defaults_to_the_pricing_models_input_limit() -> None:
    window = model_price("gpt-4o-mini").max_input_tokens
    assert window is not None
    records = [call(window, window), call(window + 1, window + 1)]
    assert compute_metrics(records, pricing_model="gpt-4o-mini")["budget.violations"] == 1
    assert compute_metrics(records, pricing_model="gpt-4o-mini", context_window=100)["budget.violations"] == 2


def test_a_tokenizer_other_than_the_pricing_models_is_refused() -> None:
    with pytest.raises(MemlabError, match=r"tokenizer='cl100k_base' counts cl100k_base.*billed in o200k_base"):
        check_tokenizer("cl100k_base", "gpt-4o-mini")
    check_tokenizer("o200k_base", "gpt-4o-mini")
    check_tokenizer("gpt-4o-mini", "gpt-4o-mini")
    check_tokenizer("cl100k_base", "gpt-4")  # gpt-4 is billed in cl100k_base tokens


def test_each_auxiliary_call_is_priced_at_its_own_model() -> None:
    mini, big = model_price("gpt-4o-mini"), model_price("gpt-4o")
    events = [
        Event(LLM_CALL, {"model": "gpt-4o", "prompt_tokens": 1000, "completion_tokens": 100}),
        Event(LLM_CALL, {"model": "extractive", "prompt_tokens": 1000, "completion_tokens": 100}),  # offline stand-in
    ]
    expected = 1000 * big.input_per_token + 100 * big.output_per_token + cost_usd(mini, 1000, 100)
    assert aux_cost_usd(events, mini) == pytest.approx(expected, rel=1e-12)


def test_a_run_counts_with_the_pricing_models_tokenizer_and_litellm_agrees_on_its_cost(
    make_config, tmp_path: Path
) -> None:
    cfg = make_config("dataset.dialogues=1", "dataset.sessions=2", "context=summarize")
    assert get_counter(cfg.tokenizer).name == "o200k_base"  # gpt-4o-mini's encoding, by default
    result = run_experiment(cfg, tmp_path / "run")
    m = result.metrics
    # What the calls produced: each recorded assistant turn (its text, and its tool calls' names and
    # arguments), tokenized on its own by tiktoken.
    encode = load_encoding("o200k_base").encode
    turns = [t for d in load_dialogues(cfg) for s in d.sessions for t in s.messages if t.role == "assistant"]
    produced = [(t.content or "") + "".join(c.name + c.arguments for c in t.tool_calls) for t in turns]
    assert m["calls"] == len(turns) and m["tokens.completion.total"] == sum(len(encode(p)) for p in produced)
    litellm = import_litellm()
    prompt, completion = litellm.cost_per_token(
        model="gpt-4o-mini", prompt_tokens=m["tokens.prompt.total"], completion_tokens=m["tokens.completion.total"]
    )
    aux_in, aux_out = litellm.cost_per_token(
        model="gpt-4o-mini", prompt_tokens=m["tokens.aux.prompt"], completion_tokens=m["tokens.aux.completion"]
    )
    assert m["tokens.aux.total"] > 0 and m["tokens.completion.total"] > 0
    assert (m["cost.prompt_usd"], m["cost.completion_usd"], m["cost.aux_usd"]) == pytest.approx(
        (prompt, completion, aux_in + aux_out), abs=2e-6
    )
    assert m["cost.usd"] == pytest.approx(prompt + completion + aux_in + aux_out, abs=2e-6)
    report = (result.run_dir / "report.md").read_text()
    assert "priced at gpt-4o-mini" in report and "counted with o200k_base" in report
    with pytest.raises(MemlabError, match="tokenizer='cl100k_base'"):
        run_experiment(make_config("tokenizer=cl100k_base"), tmp_path / "refused")
