"""AutoGen's published head-and-tail and buffered cases: memlab's TRIM (with its placeholder) beside the real contexts.

The messages and expectations are those of autogen-core's `tests/test_model_context.py`
(`test_head_and_tail_model_context`, `test_buffered_model_context`), written as memlab messages.
Where a cut falls inside a tool-call unit the two differ by design: AutoGen drops the split unit
and still says it skipped n - head - tail messages; TRIM widens the cut to keep the unit whole and
says how many it really dropped. Both results are checked.
"""

from __future__ import annotations

import pytest
from peer_libraries import AutogenBuffered, AutogenHeadTail

from memlab.context import Trim
from memlab.messages import Message, ToolCall
from memlab.units import orphans

SKIPPED = "Skipped {n} messages."
SEATTLE = [
    Message("user", "Hello!", id="0"),
    Message("assistant", "What can I do for you?", id="1"),
    Message("user", "Tell what are some fun things to do in seattle.", id="2"),
    Message("assistant", "Pike place, space needle, mt rainer", id="3"),
    Message("user", "More places?", id="4"),
]


def pairs(ms: list[Message]) -> list[tuple[str | None, str, str]]:
    return [(m.id, m.role, m.text) for m in ms]


def test_head_and_tail_published_case() -> None:
    expected = [("0", "user", "Hello!"), (None, "user", "Skipped 3 messages."), ("4", "user", "More places?")]
    assert pairs(AutogenHeadTail(head_size=1, tail_size=1).apply(SEATTLE)) == expected
    assert pairs(Trim(keep_first=1, keep_last=1, placeholder=SKIPPED).apply(SEATTLE)) == expected


@pytest.mark.parametrize(("head", "tail"), [(1, 1), (2, 3), (3, 2), (1, 4), (4, 1), (2, 2)])
def test_head_and_tail_without_tool_calls_equals_trim_with_placeholder(head: int, tail: int) -> None:
    ms = [*SEATTLE, *(Message("user" if i % 2 else "assistant", f"turn {i}", id=str(i)) for i in range(5, 9))]
    theirs = AutogenHeadTail(head_size=head, tail_size=tail).apply(ms)
    ours = Trim(keep_first=head, keep_last=tail, placeholder=SKIPPED).apply(ms)
    assert pairs(ours) == pairs(theirs)
    assert len(ours) == (head + 1 + tail if head + tail < len(ms) else len(ms))


def test_buffered_published_case_equals_trim_keeping_only_the_tail() -> None:
    expected = [("1", "assistant", "What can I do for you?"), ("2", "user", SEATTLE[2].text)]
    assert pairs(AutogenBuffered(buffer_size=2).apply(SEATTLE[:3])) == expected
    assert pairs(Trim(keep_first=0, keep_last=2).apply(SEATTLE[:3])) == expected


def test_tool_call_boundaries_autogen_drops_the_split_unit_trim_keeps_it_whole() -> None:
    call = Message("assistant", None, tool_calls=(ToolCall("c1", "lookup", '{"q": "seattle"}'),), id="call")
    result = Message("tool", "Pike place", tool_call_id="c1", name="lookup", id="result")
    ms = [
        SEATTLE[0],
        call,
        result,
        *SEATTLE[1:],
        Message("assistant", None, tool_calls=(ToolCall("c2", "f"),), id="call2"),
        Message("tool", "done", tool_call_id="c2", id="result2"),
    ]
    theirs = AutogenHeadTail(head_size=2, tail_size=1).apply(ms)
    ours = Trim(keep_first=2, keep_last=1, placeholder=SKIPPED).apply(ms)
    # AutoGen: the head's last message is a bare call, so it goes; the tail is a bare result, so it goes.
    assert pairs(theirs) == [("0", "user", "Hello!"), (None, "user", f"Skipped {len(ms) - 3} messages.")]
    # TRIM: both cuts widen to whole units; the placeholder counts what was really dropped.
    assert [m.id for m in ours] == ["0", "call", "result", None, "call2", "result2"]
    assert ours[3].text == f"Skipped {len(ms) - 5} messages."
    assert orphans(theirs) == orphans(ours) == []
