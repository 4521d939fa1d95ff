"""SUMMARIZE: summary plus the newest messages, the 50,000-character guard, and every fallback with its event."""

from __future__ import annotations

import copy
import functools
import gc
import pickle
import types
from collections.abc import Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memlab.context import SummarizationHook, Summarize
from memlab.context.summarize import FALLBACK_KEEP_FIRST
from memlab.llm import ExtractiveChatModel, prompts
from memlab.messages import Message, ToolCall
from memlab.runtime import CallContext, SecurityContext
from memlab.summary import MAX_CONVERSATION_CHARS, GrowingTranscript, write_summary
from memlab.tokens import get_counter, request_tokens
from memlab.trace import FALLBACK, LLM_CALL, SUMMARY, SourceChain, SourceIds, recording
from memlab.units import orphans


def chat(n: int, system: bool = True) -> list[Message]:
    head = [Message("system", "You are a travel agent.")] if system else []
    return head + [
        Message(
            "user" if i % 2 else "assistant",
            f"message {i} about flight HAT{i:03d} to Oslo on May {i % 28 + 1}",
            id=f"m{i}",
        )
        for i in range(n)
    ]


def kinds(events) -> list[str]:  # type: ignore[no-untyped-def]
    return [e.kind for e in events if e.kind != LLM_CALL]


def test_at_or_below_threshold_nothing_changes_and_no_model_is_called(failing_model) -> None:  # type: ignore[no-untyped-def]
    ms = chat(9)  # 10 messages with the system prompt
    with recording() as events:
        assert Summarize(failing_model, threshold=10).apply(ms) == ms
    assert events == []  # not even an LLM_CALL


def test_summary_replaces_all_but_the_last_keep_last() -> None:
    ms = chat(30)
    dicts = [m.to_openai() for m in ms]
    before = copy.deepcopy(dicts)
    with recording() as events:
        out = Summarize(ExtractiveChatModel(), threshold=20, keep_last=5).apply(ms)
        Summarize(ExtractiveChatModel(), threshold=20, keep_last=5).apply(dicts)
    assert dicts == before
    assert out[0] == ms[0]  # the instructions stay verbatim
    assert out[1].role == "system" and out[1].text.startswith(prompts.CONTEXT_SUMMARY_PREFIX["en"])
    assert out[2:] == ms[-5:]
    summary = next(e for e in events if e.kind == SUMMARY).data
    assert summary["source_ids"] == [m.id for m in ms[1:-5]]
    assert summary["accepted"] is True and summary["truncated"] is False and summary["fallback"] is None
    assert (summary["layer"], summary["counter"], summary["text"]) == ("context", "estimate", out[1].text)
    assert summary["source_tokens"] == get_counter("estimate").count_messages(ms[1:-5])
    assert summary["summary_tokens"] == get_counter("estimate").count(out[1]) < summary["source_tokens"]
    assert FALLBACK not in kinds(events)


def test_text_to_summarize_is_cut_to_max_conversation_chars(recording_model) -> None:  # type: ignore[no-untyped-def]
    model = recording_model("short")
    ms = chat(900)
    with recording() as events:
        Summarize(model, threshold=20, keep_last=5).apply(ms)
        Summarize(model, threshold=20, keep_last=5, max_conversation_chars=500).apply(ms)
    full = prompts.render_transcript(ms[1:-5])
    assert len(full) > MAX_CONVERSATION_CHARS
    for request, limit in zip(model.requests, (MAX_CONVERSATION_CHARS, 500), strict=True):
        assert prompts.transcript_of(request) == full[:limit]
    assert [e.data["truncated"] for e in events if e.kind == SUMMARY] == [True, True]


def _fallback_checks(out: list[Message], ms: list[Message], events, reason: str, error: str | None) -> None:  # type: ignore[no-untyped-def]
    assert out == ms[:FALLBACK_KEEP_FIRST]
    fallback = next(e for e in events if e.kind == FALLBACK).data
    assert fallback == {
        "layer": "context",
        "strategy": "summarize",
        "reason": reason,
        "error": error,
        "action": "keep_first",
        "source_messages": len(ms) - 1 - 5,  # all but the instructions and the kept tail
    }


@pytest.mark.parametrize(("mode", "error"), [("error", "LLMError"), ("timeout", "LLMTimeout")])
def test_a_failing_model_degrades_to_the_first_three_messages(faulty_model, mode: str, error: str) -> None:  # type: ignore[no-untyped-def]
    ms = chat(30)
    with recording() as events:
        out = Summarize(faulty_model(mode), threshold=20).apply(ms)
    assert [e.data["failed"] for e in events if e.kind == LLM_CALL] == [True]
    _fallback_checks(out, ms, events, "llm_error", error)
    (summary,) = [e.data for e in events if e.kind == SUMMARY]  # the attempt, with no summary and its fallback
    assert (summary["summary_tokens"], summary["accepted"], summary["fallback"]) == (None, False, "keep_first")


def test_no_model_degrades_to_the_first_three_messages() -> None:
    ms = chat(30)
    with recording() as events:
        out = Summarize(None, threshold=20).apply(ms)
    _fallback_checks(out, ms, events, "no_model", None)


@pytest.mark.parametrize(("mode", "reason"), [("long", "summary_longer"), ("empty", "empty_summary")])
def test_a_summary_that_is_longer_or_empty_is_rejected_and_counted(faulty_model, mode: str, reason: str) -> None:  # type: ignore[no-untyped-def]
    ms = chat(30)
    with recording() as events:
        out = Summarize(faulty_model(mode), threshold=20).apply(ms)
    assert kinds(events) == [SUMMARY, FALLBACK]
    summary = next(e.data for e in events if e.kind == SUMMARY)
    assert summary["accepted"] is False and (summary["reason"], summary["fallback"]) == (reason, "keep_first")
    if reason == "summary_longer":
        assert summary["summary_tokens"] > summary["source_tokens"]
    _fallback_checks(out, ms, events, reason, None)


def test_a_summary_as_long_as_its_source_is_used_and_one_token_longer_is_not(recording_model) -> None:  # type: ignore[no-untyped-def]
    """The design document: the summary "should not be longer than the original" (equal passes; it was refused)."""
    counter, source = get_counter("estimate"), chat(6)
    source_tokens = request_tokens(counter, source)
    head = prompts.CONTEXT_SUMMARY_PREFIX["en"]
    sizes = {counter.count(Message("system", head + "w" * n)): n for n in range(1, 4 * source_tokens)}
    for tokens, accepted in ((source_tokens, True), (source_tokens + 1, False)):
        with recording() as events:
            write_summary(
                source,
                llm=recording_model("w" * sizes[tokens]),
                counter=counter,
                layer="context",
                strategy="s",
                fallback="keep_first",
            )
        summary = next(e.data for e in events if e.kind == SUMMARY)
        assert (summary["summary_tokens"], summary["accepted"]) == (tokens, accepted)


def test_the_kept_tail_never_splits_a_tool_call() -> None:
    call = Message("assistant", None, tool_calls=(ToolCall("c1", "f"), ToolCall("c2", "f")), id="call")
    ms = [*chat(25), call, Message("tool", "r1", tool_call_id="c1"), Message("tool", "r2", tool_call_id="c2")]
    out = Summarize(ExtractiveChatModel(), threshold=20, keep_last=2).apply(ms)
    assert out[-3:] == ms[-3:] and orphans(out) == []
    fallback = Summarize(None, threshold=20).apply([Message("user", "hi"), call, *ms[-2:], *chat(25, system=False)])
    assert len(fallback) == 4 and orphans(fallback) == []  # the first three grow to the end of the unit


def test_chinese_prompts_and_prefix(recording_model) -> None:  # type: ignore[no-untyped-def]
    model = recording_model("摘要")
    out = Summarize(model, threshold=20, language="zh").apply(chat(30))
    assert out[1].text == prompts.CONTEXT_SUMMARY_PREFIX["zh"] + "摘要"
    assert model.requests[0][0].text == prompts.build("context_summary", "", "zh")[0].text


@settings(max_examples=200)
@given(
    steps=st.lists(
        st.tuples(st.sampled_from(["grow", "grow", "grow", "shrink", "replace", "copy", "limit"]), st.integers(0, 6)),
        max_size=12,
    ),
    max_chars=st.sampled_from([0, 1, 40, 120, 10_000]),
)
def test_growing_transcript_equals_render_transcript(steps: list[tuple[str, int]], max_chars: int) -> None:
    """The incremental rendering is render_transcript's whatever the source does between calls."""
    messages = chat(60, system=False)
    renderer, source, fresh = GrowingTranscript(), [], 0
    for action, k in steps:
        if action == "grow":
            source = source + messages[fresh : fresh + k]
            fresh += k
        elif action == "shrink":
            source = source[: max(0, len(source) - k)]
        elif action == "replace" and source:  # an equal message that is another object
            source = [Message(source[0].role, source[0].content, id="other"), *source[1:]]
        elif action == "copy":
            source = [Message(m.role, m.content, id=m.id) for m in source]
        limit = max_chars + k if action == "limit" else max_chars
        assert renderer.render(source, limit) == prompts.render_transcript(source, limit)


def _held(objects: Sequence[object]) -> int:
    """References held by the lists and tuples reachable from `objects` (messages, strings and classes not entered)."""
    seen: set[int] = set()
    todo, held = list(objects), 0
    while todo:
        o = todo.pop()
        if id(o) in seen or isinstance(o, Message | str | type | types.ModuleType | types.FunctionType):
            continue
        seen.add(id(o))
        held += len(o) if isinstance(o, list | tuple) else 0
        todo.extend(gc.get_referents(o))
    return held


@pytest.mark.parametrize("stage", ["summarize", "summarization_hook"])
def test_summaries_of_a_growing_history_share_its_messages(recording_model, stage: str) -> None:  # type: ignore[no-untyped-def]
    """A replay's SUMMARY events share the folded messages (`SourceChain`): 601 messages, 290 summaries of up to 594
    messages each hold about 600 references, not one tuple each (88,000); pickled together, their ids are one list."""
    ms = chat(600)
    model = recording_model("short")
    if stage == "summarize":
        fold = Summarize(model, threshold=20, keep_last=5).apply
    else:
        hook = SummarizationHook(model, trigger_tokens=100, keep_last=5)
        fold = functools.partial(hook.process, ctx=CallContext("d", "s", 0, None, SecurityContext("u")))
    with recording() as events:
        for n in range(22, len(ms) + 1, 2):  # a replay: a call after each reply
            fold(ms[:n])
    made = [e.data["source_ids"] for e in events if e.kind == SUMMARY]
    folded = [[m.id for m in ms[1 : n - 5]] for n in range(22, len(ms) + 1, 2)]
    assert len(made) == len(folded) == 290 and all(isinstance(ids, SourceIds) for ids in made)
    assert _held(made) < 2 * len(ms)
    assert len(pickle.dumps(made)) < 40 * len(ms)
    assert [list(ids) for ids in pickle.loads(pickle.dumps(made))] == folded
    assert [list(ids) for ids in made] == folded


def test_a_long_chain_lists_and_pickles_any_of_its_sources_without_recursion() -> None:
    """3,000 sources of one chain, each a message longer (more than the recursion limit's 1,000 links, were they
    linked): the first, the middle and the last each list and pickle alone."""
    ms = [Message("user", "x", id=f"m{i}") for i in range(3_000)]
    chain = SourceChain()
    made = [chain.ids(ms[:n]) for n in range(1, len(ms) + 1)]
    for n in (1, 1_500, 3_000):
        assert list(pickle.loads(pickle.dumps(made[n - 1]))) == [f"m{i}" for i in range(n)] == list(made[n - 1])


@settings(max_examples=200)
@given(
    steps=st.lists(
        st.tuples(
            st.sampled_from(["grow", "grow", "grow", "shrink", "first", "other_id", "equal", "copy", "no_id"]),
            st.integers(0, 6),
        ),
        max_size=14,
    ),
)
def test_source_chain_lists_each_sources_ids(steps: list[tuple[str, int]]) -> None:
    """Each `SourceIds` a chain makes lists its source's ids, whatever the sources do between calls and whenever it
    is read (at once, after later sources, or once pickled alone or with the others)."""
    messages = chat(60)  # a system message without an id first
    chain, source, fresh = SourceChain(), [], 0
    made: list[tuple[SourceIds, list[str]]] = []
    for action, k in steps:
        i = k % len(source) if source else 0
        if action == "grow":
            source = source + messages[fresh : fresh + k]
            fresh += k
        elif action == "shrink":
            source = source[: max(0, len(source) - k)]
        elif action == "first" and source:  # an equal message but for its id, that is another object
            source = [Message(source[0].role, source[0].content, id="other"), *source[1:]]
        elif action == "other_id" and source:  # the same inside, ends the same objects
            source = [*source[:i], Message(source[i].role, source[i].content, id=f"x{k}"), *source[i + 1 :]]
        elif action == "equal" and source:  # an equal message, another object
            source = [*source[:i], copy.copy(source[i]), *source[i + 1 :]]
        elif action == "copy":
            source = [copy.copy(m) for m in source]
        elif action == "no_id":
            source = [*source, Message("system", f"note {k}")]
        made.append((chain.ids(tuple(source) if k == 5 else source), [m.id for m in source if m.id is not None]))
        if k % 2:
            list(made[-1][0])  # read now; the others after the chain went on
    together = pickle.loads(pickle.dumps([ids for ids, _ in made]))
    alone = [pickle.loads(pickle.dumps(ids)) for ids, _ in made]
    expected = [want for _, want in made]
    assert [list(ids) for ids in together] == [list(ids) for ids in alone] == expected
    assert [list(ids) for ids, _ in made] == expected
    assert [ids == want and len(ids) == len(want) for ids, want in made] == [True] * len(made)
