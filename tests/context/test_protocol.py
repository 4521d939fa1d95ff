"""Every context entry's strategy: a new list, the input (dicts or messages) left exactly as it was, and for
memlab's own, dicts back for dicts and no orphan created."""

from __future__ import annotations

import copy
import functools

import pytest
from entries import context_strategy, is_peer, options
from hypothesis import given, settings
from hypothesis import strategies as st

from memlab.context import ContextStrategy
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

# Budgets small enough that the histories below get cut; each is set where an entry has it.
SMALL = {"max_tokens": 60, "keep_first": 2, "keep_last": 3, "threshold": 6, "head_size": 2, "tail_size": 3}
SMALL |= {"buffer_size": 5}
# Settings beside each entry's defaults: (entry, overrides).
VARIANTS = {
    "summarize-no-model": ("summarize", "context.strategy.llm=null"),
    "sliding_window-bare": ("sliding_window", "context.strategy.keep_system=false"),
}
CASES = {**{name: (name,) for name in options("context") if name != "none"}, **VARIANTS}


@functools.cache
def strategy_of(case: str) -> ContextStrategy:
    return context_strategy(CASES[case][0], SMALL, *CASES[case][1:])


@pytest.mark.parametrize("case", sorted(CASES))
@settings(max_examples=60)
@given(history=histories)
def test_input_is_never_changed_and_no_orphan_is_created(case: str, history: list[dict]) -> None:
    strategy = strategy_of(case)
    assert isinstance(strategy, ContextStrategy)
    before = copy.deepcopy(history)
    messages = as_messages(history)
    kept = list(messages)
    out_from_dicts = strategy.apply(history)
    out_from_messages = strategy.apply(messages)
    assert history == before and messages == kept
    assert out_from_messages is not messages
    if is_peer(strategy):  # a peer answers in Messages and may split a tool-call unit (measured as tool_orphans)
        assert as_messages(out_from_dicts) == out_from_messages
        return
    # dicts in, dicts out: the same cut, returned as the caller's dicts (summaries as new dicts)
    assert all(isinstance(m, dict) for m in out_from_dicts)
    assert as_messages(out_from_dicts) == [Message.from_openai(m.to_openai()) for m in out_from_messages]
    assert orphans(out_from_messages) == []
