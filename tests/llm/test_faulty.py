"""llm=faulty: every failure mode happens, is seen by the caller and is recorded; draws follow the seed."""

from __future__ import annotations

import pytest
from hydra.utils import instantiate

from memlab.llm import (
    FAULT_MODES,
    TASK_CONTEXT_SUMMARY,
    ExtractiveChatModel,
    FaultyChatModel,
    LLMError,
    LLMTimeout,
    prompts,
)
from memlab.messages import Message
from memlab.trace import LLM_CALL, recording

TRANSCRIPT = prompts.render_transcript(
    [
        Message(role="user", content="I moved to Oslo in 2021 with my sister Kari.", id="D1:1", speaker="Ann"),
        Message(role="assistant", content="Oslo is lovely. Do you like the winters?", id="D1:2", speaker="Bob"),
        Message(role="user", content="I love skiing there every January.", id="D1:3", speaker="Ann"),
    ]
)
PROMPT = prompts.build(TASK_CONTEXT_SUMMARY, TRANSCRIPT)


def outcome(model: FaultyChatModel) -> str:
    """What one call did: the error class, "empty", "long" or "ok"."""
    try:
        text = model.complete(PROMPT, task=TASK_CONTEXT_SUMMARY, max_tokens=30).text
    except LLMError as e:
        return type(e).__name__
    if not text:
        return "empty"
    return "long" if len(text) > len(TRANSCRIPT) else "ok"


@pytest.mark.parametrize(
    ("mode", "seen"), [("error", "LLMError"), ("timeout", "LLMTimeout"), ("empty", "empty"), ("long", "long")]
)
def test_each_mode_happens_on_every_call_at_rate_one(mode: str, seen: str) -> None:
    model = FaultyChatModel(ExtractiveChatModel(), rate=1.0, modes=[mode])
    with recording() as events:
        assert [outcome(model) for _ in range(5)] == [seen] * 5
    assert [e.data["backend"] for e in events] == ["faulty"] * 5
    assert all(e.data["failed"] == (mode in ("error", "timeout")) for e in events)
    if mode in ("empty", "long"):
        assert events[0].data["model"] == f"faulty:{mode}"


def test_a_timeout_is_an_llm_error_too() -> None:
    with pytest.raises(LLMError):
        FaultyChatModel(rate=1.0, modes=["timeout"]).complete(PROMPT, task=TASK_CONTEXT_SUMMARY)
    assert issubclass(LLMTimeout, LLMError)


def test_rate_zero_is_the_inner_model_recorded_once() -> None:
    inner = ExtractiveChatModel()
    with recording() as events:
        text = FaultyChatModel(inner, rate=0.0).complete(PROMPT, task=TASK_CONTEXT_SUMMARY, max_tokens=30).text
    assert text == inner.complete(PROMPT, task=TASK_CONTEXT_SUMMARY, max_tokens=30).text
    assert [e.data["backend"] for e in events if e.kind == LLM_CALL] == ["extractive"]


def test_a_partial_rate_mixes_all_modes_deterministically_per_seed() -> None:
    models = [FaultyChatModel(rate=0.5, seed=seed) for seed in (7, 7, 8)]
    runs = [[outcome(model) for _ in range(200)] for model in models]
    assert runs[0] == runs[1] and runs[0] != runs[2]
    seen = set(runs[0])
    assert seen == {"ok", "LLMError", "LLMTimeout", "empty", "long"}
    assert 60 < sum(o != "ok" for o in runs[0]) < 140  # about half of 200


@pytest.mark.parametrize(("rate", "modes"), [(1.5, FAULT_MODES), (0.5, []), (0.5, ["explode"])])
def test_bad_settings_are_rejected(rate: float, modes: list[str]) -> None:
    with pytest.raises(ValueError, match="faulty"):
        FaultyChatModel(rate=rate, modes=modes)


def test_llm_faulty_composes_with_an_extractive_inner_and_the_run_seed(make_config) -> None:
    cfg = make_config("llm=faulty", "llm.rate=1.0", "llm.modes=[error]", "seed=11")
    model = instantiate(cfg.llm)
    assert isinstance(model, FaultyChatModel) and isinstance(model.inner, ExtractiveChatModel)
    assert model.seed == 11
    with pytest.raises(LLMError, match="injected"):
        model.complete(PROMPT, task=TASK_CONTEXT_SUMMARY)


def test_the_inner_model_can_be_any_llm_entry(make_config) -> None:
    cfg = make_config("llm=faulty", "llm@llm.inner=litellm", "llm.inner.model=openai/x", "llm.inner.cache_dir=null")
    model = instantiate(cfg.llm)
    assert type(model.inner).__name__ == "LitellmChatModel" and model.inner.model == "openai/x"
