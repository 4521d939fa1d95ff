"""Whole runs with `llm=faulty` and with no model: every fallback is taken and recorded on the call it happened in."""

from __future__ import annotations

from pathlib import Path

import pytest

from memlab.context.hook import keep_head_and_tail
from memlab.dialogues import load_jsonl
from memlab.experiment import run_experiment
from memlab.messages import Message
from memlab.sim import CallRecord
from memlab.tokens import get_counter
from memlab.trace import CONTEXT_APPLY, FALLBACK, SUMMARY

SAMPLE = Path(__file__).parents[2] / "datasets" / "sample.jsonl"
MODES = [("error", "llm_error"), ("timeout", "llm_error"), ("empty", "empty_summary"), ("long", "summary_longer")]


def calls(make_config, tmp_path: Path, *overrides: str) -> list[CallRecord]:  # type: ignore[no-untyped-def]
    cfg = make_config("dataset=jsonl", f"dataset.path={SAMPLE}", *overrides)
    return [r for r in run_experiment(cfg, tmp_path / "run").records if isinstance(r, CallRecord)]


def of(call: CallRecord, kind: str) -> list[dict]:
    return [e.data for e in call.events if e.kind == kind]


@pytest.mark.parametrize(("mode", "reason"), MODES)
def test_summarize_with_llm_faulty(make_config, tmp_path: Path, mode: str, reason: str) -> None:  # type: ignore[no-untyped-def]
    faulty = ("llm=faulty", "llm.rate=1.0", f"llm.modes=[{mode}]")
    records = calls(
        make_config,
        tmp_path,
        "context=summarize",
        "context.strategy.threshold=2",
        "context.strategy.keep_last=1",
        *faulty,
    )
    summarized = [c for c in records if of(c, CONTEXT_APPLY)[0]["messages_in"] > 2]
    assert summarized
    for call in summarized:
        (fallback,) = of(call, FALLBACK)
        assert (fallback["strategy"], fallback["reason"], fallback["action"]) == ("summarize", reason, "keep_first")
        assert call.messages_kept <= 3 + 1  # the first three and the system prompt
        assert [(s["accepted"], s["fallback"]) for s in of(call, SUMMARY)] == [(False, "keep_first")]


@pytest.mark.parametrize(("mode", "reason"), MODES)
def test_summarization_hook_with_llm_faulty(make_config, tmp_path: Path, mode: str, reason: str) -> None:  # type: ignore[no-untyped-def]
    hook = ("+hooks@hooks.summarization=summarization", "hooks.summarization.trigger_tokens=1")
    records = calls(make_config, tmp_path, *hook, "llm=faulty", "llm.rate=1.0", f"llm.modes=[{mode}]")
    fallbacks = [f for c in records for f in of(c, FALLBACK)]
    assert fallbacks and all((f["reason"], f["action"]) == (reason, "head_tail_chars") for f in fallbacks)


def test_summarization_hook_without_a_model(make_config, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    hook = (
        "+hooks@hooks.summarization=summarization",
        "hooks.summarization.trigger_tokens=20",
        "hooks.summarization.llm=null",
    )
    records = calls(make_config, tmp_path, *hook)
    counter = get_counter(make_config("dataset=jsonl", f"dataset.path={SAMPLE}", *hook).hooks.summarization.counter)
    dialogues = {d.id: d for d in load_jsonl(SAMPLE)}
    truncated = [c for c in records if of(c, FALLBACK)]
    assert truncated
    unchanged = 0
    for call in truncated:
        (fallback,) = of(call, FALLBACK)
        assert (fallback["reason"], fallback["action"]) == ("no_model", "hard_truncation")
        (applied,) = of(call, CONTEXT_APPLY)[-1:]
        assert call.messages_kept == applied["messages_out"] <= applied["messages_in"]
        if applied["messages_out"] < applied["messages_in"] or applied["newest_cut_chars"] > 0:
            continue
        # Nothing dropped and nothing cut: the request is the system prompt and the newest turn, and the system
        # prompt leaves less room under the trigger than the turn's shortest cut (the omission marker alone)
        # takes, as the hook counts, so no cut brings the request under the trigger; the turn is cut only to the
        # trigger itself, which it fits, and the request goes out unchanged.
        d = dialogues[call.dialogue_id]
        system = [Message("system", d.system_prompt)] if d.system_prompt else []
        assert applied["messages_in"] == len(system) + 1
        newest = next(iter(d.messages()))
        room = 20 - sum(map(counter.count, system))
        assert counter.count(newest.with_content(keep_head_and_tail(newest.text, 0))) > room
        assert counter.count(newest) <= 20 and applied["tokens_out"] == applied["tokens_in"]
        unchanged += 1
    assert unchanged > 0  # the data has the case


def test_summarize_without_a_model(make_config, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    records = calls(
        make_config,
        tmp_path,
        "context=summarize",
        "context.strategy.threshold=2",
        "context.strategy.keep_last=1",
        "context.strategy.llm=null",
    )
    reasons = [f["reason"] for c in records for f in of(c, FALLBACK)]
    assert reasons and set(reasons) == {"no_model"}
