"""Every strategy: a new list, the input (dicts or messages) left exactly as it was, no orphan created."""

from __future__ import annotations

import copy

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memlab.context import Composite, ContextStrategy, SlidingWindow, Summarize, Trim
from memlab.llm import ExtractiveChatModel
from memlab.messages import Message, as_messages
from memlab.units import orphans

_text = st.text(alphabet="abc xyz.", max_size=40)
_plain = st.builds(lambda role, text: {"role": role, "content": text}, st.sampled_from(["user", "assistant"]), _text)
_exchange = st.builds(
    lambda i, n, text: [
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": f"c{i}_{k}", "type": "function", "function": {"name": "f", "arguments": "{}"}} for k in range(n)
            ],
        },
        *({"role": "tool", "tool_call_id": f"c{i}_{k}", "content": text} for k in range(n)),
    ],
    st.integers(0, 10**6),
    st.integers(1, 3),
    _text,
)
histories = st.builds(
    lambda system, pieces: (
        ([{"role": "system", "content": "rules"}] if system else [])
        + [m for p in pieces for m in (p if isinstance(p, list) else [p])]
    ),
    st.booleans(),
    st.lists(st.one_of(_plain, _exchange), max_size=25),
)

STRATEGIES: dict[str, ContextStrategy] = {
    "trim": Trim(keep_first=2, keep_last=3),
    "summarize": Summarize(ExtractiveChatModel(), threshold=6, keep_last=2),
    "summarize-no-model": Summarize(None, threshold=6),
    "sliding_window": SlidingWindow(max_tokens=60),
    "sliding_window-bare": SlidingWindow(max_tokens=60, keep_system=False),
    "composite": Composite([Summarize(ExtractiveChatModel(), threshold=6), SlidingWindow(max_tokens=80)]),
}


@pytest.mark.parametrize("name", sorted(STRATEGIES))
@settings(max_examples=60, deadline=None)
@given(history=histories)
def test_input_is_never_changed_and_no_orphan_is_created(name: str, history: list[dict]) -> None:
    strategy = STRATEGIES[name]
    assert isinstance(strategy, ContextStrategy)
    before = copy.deepcopy(history)
    messages = as_messages(history)
    kept = list(messages)
    out_from_dicts = strategy.apply(history)
    out_from_messages = strategy.apply(messages)
    assert history == before and messages == kept
    assert out_from_messages is not messages
    # dicts in, dicts out: the same cut, returned as the caller's dicts (summaries as new dicts)
    assert all(isinstance(m, dict) for m in out_from_dicts)
    assert as_messages(out_from_dicts) == [Message.from_openai(m.to_openai()) for m in out_from_messages]
    assert orphans(out_from_messages) == []
