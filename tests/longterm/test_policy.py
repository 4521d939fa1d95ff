"""The rule policy's `durable_statement` reads a message a window at a time and finds what a whole split finds."""

from __future__ import annotations

import functools

import pytest

from memlab import text
from memlab.llm.extract_rules import memory_type
from memlab.longterm import policy
from memlab.longterm.extraction import should_skip_extraction
from memlab.messages import Message
from memlab.vocabulary import FIRST_PERSON_SINGULAR


def _whole_split(message: Message) -> str | None:
    """`durable_statement` as it was: pysbd on the whole message (quadratic in its length)."""
    for sentence in text.split_sentences(message.text):
        s = sentence.strip()
        if not s or s.endswith(("?", "？")) or not text.speaks_in_first_person(s, FIRST_PERSON_SINGULAR):
            continue
        if should_skip_extraction(Message(role="user", content=s)) is not None:
            continue
        if memory_type(s) in policy.DURABLE_TYPES:
            return s
    return None


def test_the_durable_statement_is_the_whole_splits_on_the_corpora(
    corpus_texts: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every message of dev7 and tau-bench, read in 300-character windows (most of them in several), and long
    texts made of them at the real window: the same statement (3,656 of them found)."""
    messages = [Message(role="user", content=t) for t in corpus_texts]
    expected = [_whole_split(m) for m in messages]
    longs = [Message(role="user", content=" ".join(corpus_texts[i : i + 120])) for i in range(0, 600, 120)]
    assert all(len(m.text) > policy.WHOLE_SPLIT_CHARS for m in longs)
    assert [policy.durable_statement(m) for m in longs] == [_whole_split(m) for m in longs]
    monkeypatch.setattr(policy, "WHOLE_SPLIT_CHARS", 0)  # every message read a window at a time
    monkeypatch.setattr(policy, "iter_sentences", functools.partial(text.iter_sentences, window=300))
    assert sum(s is not None for s in expected) > 3_000
    assert [policy.durable_statement(m) for m in messages] == expected


def test_a_message_under_the_bound_is_split_whole(monkeypatch: pytest.MonkeyPatch) -> None:
    """A quote opened before a window's edge and closed after it: read a window at a time, the statement was
    its first clause alone; split whole, as every message up to `WHOLE_SPLIT_CHARS` is, the whole sentence."""
    quote = 'I said "I went home. Then I slept. It was late. ' + "We talked more. " * 90 + '" and left.'
    message = Message(role="user", content="Hello there friend. " * 140 + quote + " The end.")
    assert len(message.text) <= policy.WHOLE_SPLIT_CHARS
    assert policy.durable_statement(message) == _whole_split(message)


def test_a_long_message_is_not_split_whole(monkeypatch: pytest.MonkeyPatch) -> None:
    """A statement after 100 other sentences of a 150,000-character message: pysbd never reads more than a window."""
    seen: list[int] = []
    processor = text._SEGMENTER.processor
    monkeypatch.setattr(text._SEGMENTER, "processor", lambda t: seen.append(len(t)) or processor(t))
    filler = " ".join(f"The train left at {i} o'clock." for i in range(100))
    message = Message(role="user", content=f"{filler} I love hiking in the mountains. " + "Ok. " * 36_000)
    assert policy.durable_statement(message) == "I love hiking in the mountains."
    assert 0 < max(seen) <= text.SENTENCE_WINDOW
