"""ContextEditingInterceptor and the Hydra entries: order 30, the CONTEXT_APPLY event each entry records in a run."""

from __future__ import annotations

from pathlib import Path

import pytest
from entries import options
from omegaconf import OmegaConf

from memlab.context import (
    Composite,
    ContextEditingInterceptor,
    SlidingWindow,
    SummarizationHook,
    Summarize,
    Trim,
)
from memlab.errors import MemlabError
from memlab.experiment import build_components, instantiate, run_experiment
from memlab.llm import ExtractiveChatModel
from memlab.messages import Message
from memlab.runtime import ORDER_CONTEXT_EDITING, CallContext, SecurityContext
from memlab.tokens import get_counter
from memlab.trace import CONTEXT_APPLY, recording

SAMPLE = Path(__file__).parents[2] / "datasets" / "sample.jsonl"


def test_is_its_own_stage_at_order_30_and_reports_each_call() -> None:
    exact = get_counter("cl100k_base")
    stage = ContextEditingInterceptor(Trim(keep_first=1, keep_last=2))
    assert stage.order == ORDER_CONTEXT_EDITING == 30 and list(stage.stages()) == [stage]
    ms = [Message("user", f"message number {i}") for i in range(10)]
    ctx = CallContext("d", "s", 3, None, SecurityContext("u"), counter=exact)
    with recording() as events:
        out = stage.process(ms, ctx)
    assert out == [ms[0], ms[8], ms[9]]
    (event,) = events
    assert event.kind == CONTEXT_APPLY
    data = dict(event.data)
    assert isinstance(data.pop("latency_us"), int)
    assert data == {
        "stage": "context_editing",
        "strategy": "trim",
        "messages_in": 10,
        "messages_out": 3,
        "tokens_in": exact.count_messages(ms),
        "tokens_out": exact.count_messages(out),
        "tool_orphans": 0,
        "no_turn": False,
    }


def test_rejects_what_is_not_a_strategy() -> None:
    with pytest.raises(MemlabError, match="not a context strategy"):
        ContextEditingInterceptor("sliding_window")  # type: ignore[arg-type]
    with pytest.raises(MemlabError, match=r"strategies\[1\]"):
        Composite([Trim(), 42])  # type: ignore[list-item]


def test_the_composite_entry_is_the_documents_pipeline(make_config) -> None:  # type: ignore[no-untyped-def]
    """Every entry builds and names itself: tests/test_contracts.py; here, what COMPOSITE's default holds."""
    pipeline = instantiate(make_config("context=composite").context).strategy
    assert [type(s) for s in pipeline.strategies] == [Summarize, SlidingWindow]
    assert isinstance(pipeline.strategies[0].llm, ExtractiveChatModel)


def test_overrides_reach_the_typed_strategy_node(make_config) -> None:  # type: ignore[no-untyped-def]
    window = instantiate(make_config("context=sliding_window", "context.strategy.max_tokens=1234").context).strategy
    assert window.max_tokens == 1234 and window.counter.name == "estimate"
    exact = instantiate(make_config("context=sliding_window", "context.strategy.counter=${tokenizer}").context)
    assert exact.strategy.counter.name == "o200k_base"  # the run tokenizer: gpt-4o-mini's encoding
    step = instantiate(make_config("context=composite", "context.strategy.strategies.1.max_tokens=77").context)
    assert step.strategy.strategies[1].max_tokens == 77
    assert instantiate(make_config("context=summarize", "context.strategy.llm=null").context).strategy.llm is None
    with pytest.raises(Exception, match="max_tokenz"):
        make_config("context=sliding_window", "context.strategy.max_tokenz=5")
    with pytest.raises(Exception, match="max_tokens"):
        make_config("context=composite", "context.strategy.strategies.1.max_tokens=many")


def test_a_user_written_pipeline_is_checked_when_built(make_config) -> None:  # type: ignore[no-untyped-def]
    cfg = make_config("context=composite")
    cfg.context.strategy.strategies = OmegaConf.create(
        [{"_target_": "memlab.context.Trim"}, {"_target_": "memlab.llm.ExtractiveChatModel"}]
    )
    with pytest.raises(MemlabError, match=r"strategies\[1\] built 'ExtractiveChatModel'"):
        instantiate(cfg.context)


def test_the_summarization_hook_entry(make_config) -> None:  # type: ignore[no-untyped-def]
    assert make_config().hooks == {}
    (hook,) = [
        c
        for c in build_components(make_config("+hooks@hooks.summarization=summarization"))
        if isinstance(c, SummarizationHook)
    ]
    assert (
        hook.trigger_tokens == 80_000 and isinstance(hook.llm, ExtractiveChatModel) and hook.counter.name == "estimate"
    )
    cfg = make_config(
        "+hooks@hooks.summarization=summarization",
        "hooks.summarization.llm=null",
        "hooks.summarization.trigger_tokens=5",
    )
    (hook,) = [c for c in build_components(cfg) if isinstance(c, SummarizationHook)]
    assert hook.llm is None and hook.trigger_tokens == 5


@pytest.mark.parametrize("name", [n for n in options("context") if n != "none"])
def test_a_run_records_what_the_strategy_did_per_call(make_config, tmp_path: Path, name: str) -> None:  # type: ignore[no-untyped-def]
    cfg = make_config(
        "dataset=jsonl", f"dataset.path={SAMPLE}", f"context={name}", "+hooks@hooks.summarization=summarization"
    )
    result = run_experiment(cfg, tmp_path / name)
    calls = [r for r in result.records if type(r).__name__ == "CallRecord"]
    assert calls
    for call in calls:
        applied = [e.data for e in call.events if e.kind == CONTEXT_APPLY]
        assert [a["strategy"] for a in applied] == [name]  # the hook stays quiet under its trigger
        assert applied[0]["messages_out"] == call.messages_kept
