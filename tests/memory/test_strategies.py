"""Memory strategies: the design document's worked examples, tool-call integrity, and properties."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memlab.errors import MemlabError
from memlab.llm import TASK_MEMORY_SUMMARY, ExtractiveChatModel
from memlab.llm.prompts import MEMORY_SUMMARY_PREFIX
from memlab.memory import (
    DeleteStrategy,
    FilterStrategy,
    SummarizeStrategy,
    TrimStrategy,
    keep_latest,
    keep_matching,
    rules_predicate,
    trim,
)
from memlab.messages import Message, ToolCall, as_messages
from memlab.trace import FALLBACK, LLM_CALL, SUMMARY, recording
from memlab.units import message_units, orphans


def texts(ms: Sequence[Message]) -> list[str]:
    return [m.text for m in ms]


def test_delete_keeps_the_latest_five() -> None:
    ms = [Message(role="user", content=f"msg{i}") for i in range(1, 9)]
    assert texts(DeleteStrategy(5).apply(ms)) == ["msg4", "msg5", "msg6", "msg7", "msg8"]


def test_trim_keeps_first_two_and_last_three() -> None:
    ms = [Message(role="user", content=str(i)) for i in range(1, 11)]
    assert texts(TrimStrategy(keep_first=2, keep_last=3).apply(ms)) == ["1", "2", "8", "9", "10"]
    assert trim(ms, 6, 6) == ms  # nothing in the middle to delete


DOCUMENT_HISTORY = [
    {"role": "user", "content": "我叫小王"},
    {"role": "assistant", "content": "你好"},
    {"role": "assistant", "content": "重要：明天九点开会"},
    {"role": "system", "content": "tools loaded"},
    {"role": "user", "content": "好的"},
    {"role": "assistant", "content": "收到"},
]


def test_filter_from_config_rules_matches_the_document_predicate() -> None:
    from_config = FilterStrategy([{"roles": ["user"]}, {"roles": ["assistant"], "keywords": ["重要"]}])

    def document(m: Message) -> bool:  # msg.getRole() == USER || (ASSISTANT && content.contains("重要"))
        return m.role == "user" or (m.role == "assistant" and "重要" in m.text)

    kept = from_config.apply(DOCUMENT_HISTORY)
    assert texts(kept) == ["我叫小王", "重要：明天九点开会", "好的"]
    assert kept == FilterStrategy(predicate=document).apply(DOCUMENT_HISTORY)


def test_filter_rules_with_patterns_and_errors() -> None:
    keep = rules_predicate([{"patterns": [r"\d{1,2}点"]}, {"roles": ["system"]}])
    assert [keep(m) for m in as_messages(DOCUMENT_HISTORY)] == [False, False, False, True, False, False]
    nine = rules_predicate([{"roles": ["assistant"], "patterns": ["九点"], "keywords": ["收到"]}])
    assert texts(keep_matching(DOCUMENT_HISTORY, nine)) == ["重要：明天九点开会", "收到"]  # a keyword or a pattern
    with pytest.raises(MemlabError, match=r"rules\[0\]\.patterns"):
        rules_predicate([{"patterns": ["("]}])
    with pytest.raises(MemlabError, match="at least one rule"):
        FilterStrategy([])


def tool_history() -> list[Message]:
    call = Message(role="assistant", tool_calls=(ToolCall("a", "search"), ToolCall("b", "price")), id="3")
    return [
        Message(role="user", content="1", id="1"),
        Message(role="assistant", content="2", id="2"),
        call,
        Message(role="tool", content="r-a", tool_call_id="a", id="4"),
        Message(role="tool", content="r-b", tool_call_id="b", id="5"),
        Message(role="assistant", content="6", id="6"),
        Message(role="user", content="7", id="7"),
    ]


def test_cuts_never_split_a_tool_exchange() -> None:
    ms = tool_history()
    assert [m.id for m in trim(ms, 4, 1)] == ["1", "2", "3", "4", "5", "7"]  # first 4 ends inside: whole group kept
    assert [m.id for m in keep_latest(ms, 3)] == ["3", "4", "5", "6", "7"]  # the window starts inside: whole group kept
    assert [m.id for m in keep_matching(ms, lambda m: m.role == "tool" and m.text == "r-b")] == ["3", "4", "5"]
    assert [m.id for m in keep_matching(ms, lambda m: m.role == "user")] == ["1", "7"]


def long_history(n: int = 30, text: str = "I prefer window seats and I live in Oslo") -> list[Message]:
    return [Message(role="user" if i % 2 == 0 else "assistant", content=f"{text} #{i}", id=f"D1:{i}") for i in range(n)]


def test_summarize_uses_the_persistent_memory_prompt_and_prefix(scripted: Any) -> None:
    model = scripted("Prefers window seats; lives in Oslo.")
    with recording() as events:
        out = SummarizeStrategy(model, threshold=20, keep_last=5).apply(long_history())
    ((prompt, task),) = model.asked
    assert task == TASK_MEMORY_SUMMARY and "preferences, habits" in prompt[0].text
    assert out[0] == Message(role="system", content="[Persistent memory summary] Prefers window seats; lives in Oslo.")
    assert out[1:] == long_history()[-5:]
    assert [e.kind for e in events] == [SUMMARY]


def test_summarize_in_chinese_uses_the_chinese_prefix_and_prompt(scripted: Any) -> None:
    model = scripted("喜欢靠窗座位")
    out = SummarizeStrategy(model, threshold=20, keep_last=5).apply(long_history(text="我喜欢靠窗的座位，我住在上海"))
    assert out[0].text == MEMORY_SUMMARY_PREFIX["zh"] + "喜欢靠窗座位"
    assert "提取用户偏好、习惯、重要事实" in model.asked[0][0][0].text
    assert SummarizeStrategy(model, language="zh").apply(long_history())[0].text.startswith("[持久化记忆摘要] ")


def test_summarize_truncates_what_it_sends(scripted: Any) -> None:
    model = scripted("ok")
    SummarizeStrategy(model, max_conversation_chars=50_000).apply(long_history(40, "x" * 5_000))
    sent = model.asked[0][0][1].text
    assert 50_000 <= len(sent) < 50_000 + 100  # the transcript is cut to 50,000 characters, plus the tags


def test_summarize_below_threshold_and_on_failure_leaves_the_history(scripted: Any) -> None:
    ms = long_history()
    assert SummarizeStrategy(scripted("never asked"), threshold=30).apply(ms) == ms
    with recording() as events:
        assert SummarizeStrategy(scripted(None)).apply(ms) == ms
        assert (
            SummarizeStrategy(scripted("  ")).apply(ms) == ms
        )  # an empty summary would delete the history for nothing
    assert [(e.kind, e.data["action"]) for e in events if e.kind == FALLBACK] == [(FALLBACK, "unchanged")] * 2
    assert [(e.data["reason"], e.data["fallback"]) for e in events if e.kind == SUMMARY] == [
        ("llm_error", "unchanged"),
        ("empty_summary", "unchanged"),
    ]


def test_summarize_with_the_offline_model_and_without_one() -> None:
    with recording() as events:
        out = SummarizeStrategy(ExtractiveChatModel(counter="estimate")).apply(long_history())
    assert out[0].text.startswith("[Persistent memory summary] ") and "Oslo" in out[0].text
    assert any(e.kind == LLM_CALL and e.data["task"] == TASK_MEMORY_SUMMARY for e in events)
    with pytest.raises(MemlabError, match="llm"):
        SummarizeStrategy(None)


# --- properties ------------------------------------------------------------------------------


@st.composite
def histories(draw: Any) -> list[Message]:
    """Well-formed histories: plain messages and tool exchanges (a call message and all its results)."""
    out: list[Message] = []
    for n in range(draw(st.integers(0, 14))):
        kind = draw(st.sampled_from(["user", "assistant", "system", "tools"]))
        if kind != "tools":
            out.append(Message(role=kind, content=draw(st.sampled_from(["hi", "重要 fact", "ok 12点"])), id=str(n)))
            continue
        ids = [f"{n}.{k}" for k in range(draw(st.integers(1, 3)))]
        out.append(Message(role="assistant", tool_calls=tuple(ToolCall(i, "f") for i in ids), id=str(n)))
        for i in draw(st.permutations(ids)):
            out.append(Message(role="tool", content=f"out {i}", tool_call_id=i, id=i))
    return out


def _is_subsequence(small: Sequence[Message], big: Sequence[Message]) -> bool:
    it = iter(big)
    return all(any(m is b for b in it) for m in small)


PREDICATES = [lambda m: m.role == "user", lambda m: "重要" in m.text, lambda m: m.role == "tool", lambda m: False]


@settings(max_examples=150)
@given(histories(), st.integers(0, 6), st.integers(0, 6), st.sampled_from(range(len(PREDICATES))))
def test_strategies_keep_inputs_and_tool_pairs(ms: list[Message], a: int, b: int, p: int) -> None:
    before = list(ms)
    outs = {
        "trim": trim(ms, a, b),
        "delete": keep_latest(ms, a),
        "filter": keep_matching(ms, PREDICATES[p]),
    }
    assert ms == before  # the input list is unchanged (and messages are frozen)
    biggest = max((len(u) for u in message_units(ms)), default=0)
    for name, out in outs.items():
        assert orphans(out) == [], name
        assert _is_subsequence(out, ms), name
    assert min(a, len(ms)) <= len(outs["delete"]) <= min(a, len(ms)) + max(biggest - 1, 0)
    assert all(m in outs["filter"] for m in ms if PREDICATES[p](m))
    plain = [m for m in ms if m.role != "tool" and not m.tool_calls]
    n = len(plain)
    assert trim(plain, a, b) == (plain if a + b >= n else plain[:a] + plain[n - b :])  # the reference TRIM


@settings(max_examples=40)
@given(histories(), st.integers(0, 4))
def test_summarize_keeps_a_well_formed_suffix(scripted: Any, ms: list[Message], keep: int) -> None:
    with recording() as events:
        out = SummarizeStrategy(scripted("s"), threshold=3, keep_last=keep).apply(ms)
    rejected = [e for e in events if e.kind == SUMMARY and not e.data["accepted"]]
    if out == ms:  # at most `threshold` messages, the newest `keep_last` span every unit, or not shorter
        assert len(ms) <= 3 or len(flatten_tail(ms, keep)) == len(ms) or rejected
        return
    assert out[0] == Message(role="system", content="[Persistent memory summary] s")
    assert orphans(out[1:]) == [] and out[1:] == ms[len(ms) - len(out) + 1 :]
    assert len(out) - 1 >= min(keep, len(ms))


def flatten_tail(ms: list[Message], keep: int) -> list[Message]:
    """The newest whole units that hold at least `keep` messages (an independent re-statement)."""
    tail: list[Message] = []
    for unit in reversed(message_units(ms)):
        if len(tail) >= keep:
            break
        tail = unit + tail
    return tail
