"""The synthetic generator: deterministic per seed, probes whose evidence holds the planted fact."""

from __future__ import annotations

import json
import statistics
from collections import Counter
from datetime import date, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memlab.dialogues import Dialogue, generate_synthetic
from memlab.dialogues.schemas import SyntheticConfig
from memlab.dialogues.synthetic_text import MEMORY_TYPES, SLOTS
from memlab.errors import MemlabError


def snapshot(dialogues: list[Dialogue]) -> str:
    """Everything generated, timestamps and metadata included (Dialogue equality skips those)."""
    return repr(
        [
            (
                d.id,
                d.user_id,
                d.system_prompt,
                [(s.id, s.started_at, [(m, m.timestamp) for m in s.messages]) for s in d.sessions],
                [(p, p.metadata) for p in d.probes],
                d.metadata,
            )
            for d in dialogues
        ]
    )


sizes = st.fixed_dictionaries(
    {
        "dialogues": st.integers(1, 3),
        "sessions": st.integers(2, 5),
        "turns_per_session": st.integers(2, 8),
        "update_rate": st.floats(0, 1),
        "tool_call_rate": st.floats(0, 1),
        "message_chars_mean": st.floats(10, 400),
        "message_chars_sigma": st.floats(0, 1.2),
        "tool_output_chars": st.floats(10, 3000),
        "session_gap_days": st.floats(0.01, 60),
    }
)


@settings(max_examples=40)
@given(seed=st.integers(0, 2**32), kwargs=sizes, data=st.data())
def test_deterministic_and_evidence_holds_the_planted_fact(seed: int, kwargs: dict, data) -> None:
    turns = kwargs["sessions"] * kwargs["turns_per_session"]
    kwargs["facts"] = data.draw(st.integers(0, min(len(SLOTS), turns // 3)))
    dialogues = generate_synthetic(seed=seed, **kwargs)
    assert snapshot(dialogues) == snapshot(generate_synthetic(seed=seed, **kwargs))
    for d in dialogues:
        messages = {m.id: m for m in d.messages()}
        assert len(messages) == len(d)  # ids unique within a dialogue
        assert len(d.probes) == kwargs["facts"]
        for p in d.probes:
            [evidence] = p.evidence
            stated = messages[evidence]
            assert stated.role == "user" and p.metadata["statement"] in stated.text
            assert p.category == ("UPDATE" if p.metadata["superseded"] else p.metadata["type"])
            if p.metadata["type"] == "EPISODE":
                assert date.fromisoformat(p.answer) < stated.timestamp.date()
            else:
                assert p.answer in p.metadata["statement"]
            for old in p.metadata["superseded"]:
                assert messages[old].timestamp < stated.timestamp and old.split(":")[0] != evidence.split(":")[0]
                assert p.metadata["superseded_answer"] in messages[old].text
                assert p.metadata["superseded_answer"] != p.answer
        times = [m.timestamp for m in d.messages()]
        assert times == sorted(times)
        _assert_tool_pairing(list(d.messages()))


def _assert_tool_pairing(messages) -> None:
    for i, m in enumerate(messages):
        if m.tool_calls:
            assert m.content is None and messages[i + 1].role == "tool"
            assert messages[i + 1].tool_call_id == m.tool_calls[0].id
            assert messages[i + 2].role == "assistant" and messages[i + 2].content
        if m.role == "tool":
            assert messages[i - 1].tool_calls[0].id == m.tool_call_id


def test_seeds_differ_and_dialogue_k_does_not_depend_on_the_count() -> None:
    assert snapshot(generate_synthetic(seed=0)) != snapshot(generate_synthetic(seed=1))
    assert snapshot(generate_synthetic(seed=3, dialogues=2)) == snapshot(generate_synthetic(seed=3, dialogues=5)[:2])


def test_default_dataset_covers_every_type_over_weeks() -> None:
    dialogues = generate_synthetic(seed=0)
    categories = Counter(p.category for d in dialogues for p in d.probes)
    assert set(MEMORY_TYPES) <= set(categories) and categories["UPDATE"] > 0
    for d in dialogues:
        span = d.sessions[-1].started_at - d.sessions[0].started_at
        assert span > timedelta(weeks=4)
        facts = d.metadata["facts"]
        superseded = [f for f in facts if f.superseded_by is not None]
        assert len(facts) == len(d.probes) + len(superseded)
    assert sum(d.metadata["tool_calls"] for d in dialogues) == sum(
        1 for d in dialogues for m in d.messages() if m.tool_calls
    )


@pytest.mark.parametrize(("chars", "tool_chars"), [(80, 500), (800, 20000)])
def test_sizes_follow_the_configured_distribution(chars: int, tool_chars: int) -> None:
    fixed = generate_synthetic(
        seed=0, message_chars_mean=chars, message_chars_sigma=0, tool_output_chars=tool_chars, tool_output_sigma=0
    )
    # sigma 0: every message is its mean size, overshooting by the sentences that complete it
    for m in (m for d in fixed for m in d.messages()):
        if m.role in ("user", "assistant") and m.content is not None:
            assert chars <= len(m.text) < chars + 300
        if m.role == "tool":
            assert tool_chars <= len(m.text) < tool_chars + 200
            assert m.name == "read_logs" or isinstance(json.loads(m.text), list)
    spread = generate_synthetic(seed=0, message_chars_mean=chars, message_chars_sigma=1.0)

    def stdev(dialogues: list[Dialogue]) -> float:
        return statistics.stdev(len(m.text) for d in dialogues for m in d.messages() if m.role == "user")

    assert stdev(spread) > 3 * stdev(fixed)


def test_retrieval_is_not_trivial() -> None:
    """Chatter mentions the slots' values about other people, so a value's words alone mislead."""
    [d] = generate_synthetic(seed=0, dialogues=1, sessions=8, turns_per_session=20, facts=12)
    decoys = 0
    for p in d.probes:
        holders = {m.id for m in d.messages() if m.role == "user" and p.answer in m.text}
        decoys += len(holders - set(p.evidence) - set(p.metadata["superseded"]))
    assert decoys > 0


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"facts": 100}, r"facts=100 is more than the \d+ distinct facts"),
        (
            {"facts": 6, "sessions": 1, "turns_per_session": 4},
            r"need more user turns than sessions=1 x turns_per_session=4",
        ),
        ({"sessions": 0}, r"synthetic\.sessions=0 is out of range; valid: >= 1 and <= 1000"),
        ({"update_rate": 1.5}, r"update_rate=1\.5 is out of range; valid: >= 0 and <= 1"),
        (
            {"message_chars_mean": 1e12},
            r"message_chars_mean=1000000000000\.0 is out of range; valid: >= 1 and <= 100000",
        ),
        ({"tool_output_sigma": -1}, r"tool_output_sigma=-1 is out of range"),
        ({"start": "monday"}, r"start='monday' is not an ISO 8601 time"),
    ],
)
def test_bad_settings_are_user_errors(kwargs: dict, message: str) -> None:
    with pytest.raises(MemlabError, match=message):
        generate_synthetic(seed=0, **kwargs)


def test_a_config_object_and_keywords_give_the_same_dialogues() -> None:
    """The generator reads its schema: a `SyntheticConfig` and the same fields as keywords are one call."""
    config = SyntheticConfig(seed=5, dialogues=2, sessions=3, facts=3)
    assert snapshot(generate_synthetic(config)) == snapshot(
        generate_synthetic(seed=5, dialogues=2, sessions=3, facts=3)
    )
    assert snapshot(generate_synthetic(config, seed=6)) == snapshot(
        generate_synthetic(seed=6, dialogues=2, sessions=3, facts=3)
    )


def test_an_unknown_setting_is_named() -> None:
    with pytest.raises(MemlabError, match=r"unknown setting\(s\) sesions; known: .*sessions"):
        generate_synthetic(sesions=3)
