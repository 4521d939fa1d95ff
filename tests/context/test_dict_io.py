"""memlab's context strategies given OpenAI dicts return OpenAI dicts: the caller's own, extra keys and images kept."""

from __future__ import annotations

from typing import Any

import pytest
from entries import context_strategy, is_peer, options

from memlab.messages import Message


def _conversation() -> list[dict[str, Any]]:
    ms: list[dict[str, Any]] = [{"role": "system", "content": "You are helpful.", "x-trace": "sys"}]
    filler = " We also talked about the hotel near the river, the museum tickets and the dinner on Friday."
    for i in range(12):
        ms.append(
            {"role": "user", "content": f"Question {i} about the trip to Lisbon in May." + filler, "x-trace": f"u{i}"}
        )
        ms.append(
            {
                "role": "assistant",
                "content": f"Answer {i}: the flight leaves at {i + 6} am." + filler * 2,
                "x-trace": f"a{i}",
            }
        )
    ms[-2]["content"] = [
        {"type": "text", "text": "What is in this picture?"},
        {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}},
    ]
    return ms


# Budgets that cut the conversation above, each set where an entry has it.
KNOBS = {"max_tokens": 800, "keep_first": 1, "keep_last": 4, "threshold": 10}


@pytest.mark.parametrize("name", [n for n in options("context") if n != "none"])
def test_dicts_in_dicts_out_keeps_what_the_caller_sent(name: str) -> None:
    strategy = context_strategy(name, KNOBS)
    if is_peer(strategy):
        pytest.skip(f"context={name} is a peer: it answers in memlab Messages, dicts in or not")
    ms = _conversation()
    before = [dict(m) for m in ms]
    out = strategy.apply(ms)
    assert all(isinstance(m, dict) for m in out)
    assert ms == before  # the input is untouched
    kept = [m for m in out if any(m is original for original in ms)]
    made = [m for m in out if not any(m is original for original in ms)]
    assert kept and ms[-2] in kept, "the newest user turn (with the image part) is sent as the caller wrote it"
    assert kept[-2]["content"][1]["image_url"]["url"].startswith("data:image/png")
    assert all("x-trace" in m for m in kept)
    assert all(set(m) <= {"role", "content", "name"} for m in made), "what a strategy makes is a plain message"
    # the same strategy on Messages cuts the same places
    as_messages = strategy.apply([Message.from_openai(m) for m in ms])
    assert [m.role for m in as_messages] == [m["role"] for m in out]
    assert [m.text for m in as_messages][-3:] == [Message.from_openai(m).text for m in out][-3:]
