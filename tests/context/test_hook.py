"""SummarizationHook: the 80,000-token trigger, the LLM summary, and the document's three fallbacks with events."""

from __future__ import annotations

import pytest

from memlab.context import ContextEditingInterceptor, SlidingWindow, SummarizationHook, keep_head_and_tail
from memlab.context.hook import KEEP_CHARS, TRIGGER_TOKENS
from memlab.errors import MemlabError
from memlab.llm import ExtractiveChatModel, prompts
from memlab.memory import InMemoryChatMemory
from memlab.messages import Message, ToolCall
from memlab.runtime import ORDER_SUMMARIZATION_HOOK, CallContext, Runtime, SecurityContext
from memlab.tokens import get_counter
from memlab.trace import CONTEXT_APPLY, FALLBACK, SUMMARY, recording
from memlab.units import orphans

ESTIMATE = get_counter("estimate")


def ctx() -> CallContext:
    return CallContext("d", "s", 0, None, SecurityContext("u"), counter=ESTIMATE)


def history(n: int, words: int = 20) -> list[Message]:
    body = [
        Message(
            "user" if i % 2 else "assistant", f"turn {i}: " + " ".join(f"w{i}x{j}" for j in range(words)), id=f"m{i}"
        )
        for i in range(n)
    ]
    return [Message("system", "You are an airline agent."), *body]


def events_of(events, kind: str) -> list[dict]:  # type: ignore[no-untyped-def]
    return [e.data for e in events if e.kind == kind]


def test_under_the_trigger_the_request_passes_through(failing_model) -> None:  # type: ignore[no-untyped-def]
    ms = history(50)
    hook = SummarizationHook(failing_model, trigger_tokens=ESTIMATE.count_messages(ms))
    with recording() as events:
        assert hook.process(ms, ctx()) == ms
    assert events == []  # not even an LLM_CALL


def test_the_default_trigger_is_80000_estimated_tokens(locomo: list[list[Message]]) -> None:
    ms = [m for conversation in locomo for m in conversation]
    assert ESTIMATE.count_messages(ms) > TRIGGER_TOKENS == 80_000
    hook = SummarizationHook(ExtractiveChatModel())
    out = hook.process(ms, ctx())
    assert ESTIMATE.count_messages(out) < TRIGGER_TOKENS
    assert out[-1] == ms[-1] and out[0].text.startswith(prompts.CONTEXT_SUMMARY_PREFIX["en"])
    assert hook.process(ms[:300], ctx()) == ms[:300]


def test_with_a_model_the_middle_becomes_one_summary() -> None:
    ms = history(60)
    with recording() as events:
        out = SummarizationHook(ExtractiveChatModel(), trigger_tokens=500).process(ms, ctx())
    assert out[0] == ms[0] and out[-1] == ms[-1] and len(out) == 3
    assert out[1].text.startswith(prompts.CONTEXT_SUMMARY_PREFIX["en"])
    (summary,) = events_of(events, SUMMARY)
    assert summary["accepted"] is True and summary["source_ids"] == [m.id for m in ms[1:-1]]
    (applied,) = events_of(events, CONTEXT_APPLY)
    assert applied["stage"] == "summarization_hook" and (applied["messages_in"], applied["messages_out"]) == (61, 3)
    assert applied["tokens_out"] == ESTIMATE.count_messages(out) < applied["tokens_in"]
    assert events_of(events, FALLBACK) == []


def test_no_model_truncates_hard() -> None:
    ms = history(60)
    with recording() as events:
        out = SummarizationHook(None, trigger_tokens=500).process(ms, ctx())
    assert out == SlidingWindow(max_tokens=500, keep_system=True).apply(ms)
    assert out[0] == ms[0] and ESTIMATE.count_messages(out) <= 500
    (fallback,) = events_of(events, FALLBACK)
    assert fallback["reason"] == "no_model" and fallback["action"] == "hard_truncation"
    assert (fallback["layer"], fallback["source_messages"]) == ("context", len(ms))
    assert [e.kind for e in events] == [FALLBACK, CONTEXT_APPLY]


def _head_tail_checks(out: list[Message], ms: list[Message], events, reason: str, error: str | None) -> None:  # type: ignore[no-untyped-def]
    transcript = prompts.render_transcript(ms[1:-1])
    assert len(transcript) > 2 * KEEP_CHARS
    text = out[1].text.removeprefix(prompts.CONTEXT_SUMMARY_PREFIX["en"])
    assert text.startswith(transcript[:KEEP_CHARS]) and text.endswith(transcript[-KEEP_CHARS:])
    assert f"[... {len(transcript) - 2 * KEEP_CHARS} characters omitted ...]" in text
    assert out[0] == ms[0] and out[2] == ms[-1] and len(out) == 3
    (fallback,) = events_of(events, FALLBACK)
    assert (fallback["reason"], fallback["error"], fallback["action"]) == (reason, error, "head_tail_chars")


@pytest.mark.parametrize(("mode", "error"), [("error", "LLMError"), ("timeout", "LLMTimeout")])
def test_a_failing_model_keeps_the_first_and_last_1000_characters(faulty_model, mode: str, error: str) -> None:  # type: ignore[no-untyped-def]
    ms = history(60)
    with recording() as events:
        out = SummarizationHook(faulty_model(mode), trigger_tokens=500).process(ms, ctx())
    _head_tail_checks(out, ms, events, "llm_error", error)
    (summary,) = events_of(events, SUMMARY)
    assert (summary["summary_tokens"], summary["accepted"], summary["fallback"]) == (None, False, "head_tail_chars")


@pytest.mark.parametrize(("mode", "reason"), [("long", "summary_longer"), ("empty", "empty_summary")])
def test_a_summary_longer_than_the_original_or_empty_is_rejected(faulty_model, mode: str, reason: str) -> None:  # type: ignore[no-untyped-def]
    ms = history(60)
    with recording() as events:
        out = SummarizationHook(faulty_model(mode), trigger_tokens=500).process(ms, ctx())
    (summary,) = events_of(events, SUMMARY)
    assert summary["accepted"] is False
    if mode == "long":
        assert summary["summary_tokens"] > summary["source_tokens"]
    _head_tail_checks(out, ms, events, reason, None)


def test_keep_head_and_tail() -> None:
    assert keep_head_and_tail("short", keep_chars=10) == "short"
    clipped = keep_head_and_tail("a" * 1500 + "b" * 1500)
    assert clipped == "a" * 1000 + "\n[... 1000 characters omitted ...]\n" + "b" * 1000
    assert "省略 1000 个字符" in keep_head_and_tail("x" * 3000, language="zh")


def test_the_newest_tool_exchange_stays_whole() -> None:
    call = Message("assistant", None, tool_calls=(ToolCall("c1", "f"),))
    ms = [*history(60), call, Message("tool", "result", tool_call_id="c1")]
    for llm in (None, ExtractiveChatModel()):
        out = SummarizationHook(llm, trigger_tokens=500).process(ms, ctx())
        assert out[-2:] == ms[-2:] and orphans(out) == []


def test_the_hook_runs_after_context_editing_and_never_touches_the_history() -> None:
    memory = InMemoryChatMemory()
    for m in history(60)[1:]:
        memory.append(m)
    hook = SummarizationHook(None, trigger_tokens=300)
    editing = ContextEditingInterceptor(SlidingWindow(max_tokens=100_000))
    rt = Runtime(memory, ESTIMATE, SecurityContext("u"), components=[hook, editing], system_prompt="sys")
    assert hook.order == ORDER_SUMMARIZATION_HOOK and rt.stages == [editing, hook]
    with recording() as events:
        out = rt.build_request()
    assert [e.data["stage"] for e in events if e.kind == CONTEXT_APPLY] == ["context_editing", "summarization_hook"]
    assert ESTIMATE.count_messages(out) <= 300 and len(memory) == 60


@pytest.mark.parametrize("bad", [{"trigger_tokens": -1}, {"language": "fr"}, {"keep_chars": "many"}])
def test_bad_settings_name_the_key(bad: dict) -> None:
    with pytest.raises(MemlabError, match=next(iter(bad))):
        SummarizationHook(**bad)


@pytest.mark.parametrize("trigger", [200, 500])
def test_no_model_keeps_the_newest_message_cut_to_fit_when_it_alone_exceeds_the_trigger(trigger: int) -> None:
    huge = Message("user", "question " + " ".join(f"detail{j}" for j in range(2_000)) + " so what now?", id="last")
    ms = [*history(10), huge]
    assert ESTIMATE.count(huge) > trigger
    with recording() as events:
        out = SummarizationHook(None, trigger_tokens=trigger).process(ms, ctx())
    assert [m.role for m in out] == ["system", "user"] and out[0] == ms[0]
    newest = out[-1]
    assert newest.id == "last" and ESTIMATE.count_messages(out) <= trigger
    assert newest.text.startswith("question detail0") and newest.text.endswith("so what now?")
    assert "characters omitted" in newest.text
    (fallback,) = events_of(events, FALLBACK)
    (applied,) = events_of(events, CONTEXT_APPLY)
    assert fallback["action"] == "hard_truncation" and applied["newest_cut_chars"] == len(huge.text) - len(newest.text)
    # As much as fits is kept: one more character at each end would go over.
    kept_each = (len(newest.text) - len(newest.text.split("\n")[1]) - 2) // 2  # the text minus the marker, halved
    longer = huge.with_content(keep_head_and_tail(huge.text, kept_each + 1))
    assert ESTIMATE.count_messages([out[0], longer]) > trigger


@pytest.mark.parametrize("before", [0, 10], ids=["nothing_to_summarize", "a_small_middle"])
def test_with_a_model_a_newest_message_over_the_trigger_is_cut_to_fit(before: int) -> None:
    """The defect: with a model the request stayed over the trigger (90,012 tokens sent at 80,000)."""
    huge = Message("user", "question " + " ".join(f"detail{j}" for j in range(2_000)) + " so what now?", id="last")
    ms = [*history(before), huge] if before else [Message("system", "You are an airline agent."), huge]
    with recording() as events:
        out = SummarizationHook(ExtractiveChatModel(), trigger_tokens=500).process(ms, ctx())
    assert ESTIMATE.count_messages(out) <= 500 and out[0] == ms[0]
    assert out[-1].id == "last" and out[-1].text.endswith("so what now?") and "characters omitted" in out[-1].text
    (applied,) = events_of(events, CONTEXT_APPLY)
    assert applied["newest_cut_chars"] == len(huge.text) - len(out[-1].text) > 0


def test_no_model_keeps_the_newest_tool_unit_whole_when_cut() -> None:
    call = Message("assistant", None, tool_calls=(ToolCall("c1", "search", "{}"),), id="a")
    result = Message("tool", "row " * 3_000, tool_call_id="c1", id="t")
    ms = [*history(4), call, result]
    out = SummarizationHook(None, trigger_tokens=300).process(ms, ctx())
    assert [m.id for m in out[1:]] == ["a", "t"] and orphans(out) == []
    assert ESTIMATE.count_messages(out) <= 300


@pytest.mark.parametrize("llm", [None, ExtractiveChatModel()], ids=["no_model", "a_model"])
def test_system_messages_alone_over_the_trigger_leave_the_newest_turn_whole(llm) -> None:  # type: ignore[no-untyped-def]
    """The defect: the newest turn became the omission marker alone, cut by -9 characters, the request grew."""
    ms = [Message("system", "s" * 2_000), Message("user", "hello there"), Message("assistant", "hi")]
    ms.append(Message("user", "what is my order status?"))
    with recording() as events:
        out = SummarizationHook(llm, trigger_tokens=500).process(ms, ctx())
    assert out == [ms[0], ms[-1]]
    (applied,) = events_of(events, CONTEXT_APPLY)
    assert applied["newest_cut_chars"] == 0 and applied["tokens_out"] < applied["tokens_in"]


def test_system_messages_alone_over_the_trigger_cut_the_newest_turn_to_the_trigger_only_when_it_alone_is_over() -> None:
    huge = Message("user", "question " + " ".join(f"detail{j}" for j in range(2_000)) + " so what now?", id="last")
    ms = [Message("system", "s" * 2_000), huge]
    out = SummarizationHook(None, trigger_tokens=500).process(ms, ctx())
    assert out[0] == ms[0] and out[-1].id == "last" and out[-1].text.endswith("so what now?")
    assert 490 < ESTIMATE.count(out[-1]) <= 500  # cut to the trigger, not to the room the system prompt leaves (none)
