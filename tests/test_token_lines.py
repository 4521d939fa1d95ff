"""Counting a multi-line text from cached per-line counts gives tiktoken's count of the whole text."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memlab.tokens import ENCODINGS, EstimateCounter, TiktokenCounter, _separable, load_encoding

# Characters that stress the regex split at a line break: punctuation that absorbs a newline, "/"
# (o200k absorbs it after one), apostrophes (contractions), digits, spaces, CJK, marks and emoji.
_ALPHABET = st.sampled_from([*"aZé 9.,!?'\"/:;-_()[]<>\t\r\n中文。！\u0301🙂", "\n\n", "  ", "'s", "...", "http://"])
_TEXTS = st.lists(_ALPHABET, max_size=60).map("".join)


# Lines that take the per-line path (see memlab.tokens._separable) and lines of any kind.
_SEPARABLE = _TEXTS.map(str.strip).filter(lambda s: bool(s) and not s[0].isspace() and s[0] != "/")


def _tiktoken(encoding: str, text: str) -> int:
    return len(load_encoding(encoding).encode(text, disallowed_special=()))


@pytest.mark.parametrize("encoding", ENCODINGS)
@settings(max_examples=400)
@given(lines=st.lists(_SEPARABLE, min_size=1, max_size=8), other=st.lists(_TEXTS, min_size=1, max_size=4))
def test_count_lines_is_the_count_of_the_joined_text(encoding: str, lines: list[str], other: list[str]) -> None:
    counter = TiktokenCounter(encoding)
    assert counter.count_lines(lines) == _tiktoken(encoding, "\n".join(lines))
    assert counter.count_lines(lines + other) == _tiktoken(encoding, "\n".join(lines + other))
    long = "\n".join(lines * (1 + TiktokenCounter.LONG_TEXT // len("".join(lines))))
    assert counter.count_text(long) == _tiktoken(encoding, long)


def _locomo_lines(locomo_path) -> list[str]:
    """The transcript lines of the first LoCoMo conversation, as the summarizer's prompt renders them."""
    sample = json.loads(locomo_path.read_text(encoding="utf-8"))[0]["conversation"]
    return [
        f"[{t['dia_id']}] {t['speaker']}: {t['text']}"
        for key, turns in sample.items()
        if key.startswith("session_") and isinstance(turns, list)
        for t in turns
    ]


@pytest.mark.parametrize("encoding", ENCODINGS)
def test_a_locomo_transcript_counts_the_same_line_by_line(encoding: str, locomo_path) -> None:
    text = "\n".join(_locomo_lines(locomo_path))
    counter = TiktokenCounter(encoding)
    assert counter.count_text(text) == len(load_encoding(encoding).encode(text, disallowed_special=()))
    assert counter.count_text(text[:50_000]) == len(
        load_encoding(encoding).encode(text[:50_000], disallowed_special=())
    )


@given(lines=st.lists(_TEXTS, max_size=8))
def test_the_estimate_counts_joined_lines_by_length(lines: list[str]) -> None:
    counter = EstimateCounter()
    assert counter.count_lines(lines) == counter.count_text("\n".join(lines))


@pytest.mark.parametrize("encoding", ENCODINGS)
@settings(max_examples=200)
@given(lines=st.lists(_SEPARABLE, min_size=1, max_size=8), grown=st.lists(_TEXTS, min_size=1, max_size=4))
def test_a_text_that_grows_between_its_last_lines_counts_as_tiktoken(
    encoding: str, lines: list[str], grown: list[str]
) -> None:
    """The summarizer's prompt grows inside its tags: the earlier lines, then new ones, then the closing line."""
    counter = TiktokenCounter(encoding)
    body = lines * (1 + TiktokenCounter.HEAD_TEXT // len("".join(lines)))
    for text in ("\n".join([*body, "</end>"]), "\n".join([*body, *grown, "</end>"]), "\n".join([*body, *grown])):
        assert counter.count_text(text) == _tiktoken(encoding, text)


def test_a_grown_prompt_counts_only_its_new_lines(locomo_path) -> None:
    """Counting a prompt a line longer than the last one tokenizes the new line and the closing tag, not the rest,
    though a shorter multi-line text (the summary of the first prompt) was counted in between."""
    lines = [line for line in _locomo_lines(locomo_path) if _separable(line)][:200]
    counter = TiktokenCounter("o200k_base")
    prompt = "<conversation>\n{}\n</conversation>".format
    first = prompt("\n".join(lines[:-1]))
    assert len(first) >= TiktokenCounter.HEAD_TEXT
    assert counter.count_text(first) == _tiktoken("o200k_base", first)
    summary = "\n".join(lines[:8])
    assert TiktokenCounter.LONG_TEXT <= len(summary) < TiktokenCounter.HEAD_TEXT
    assert counter.count_text(summary) == _tiktoken("o200k_base", summary)
    counter._lines.clear()
    assert counter.count_text(prompt("\n".join(lines))) == _tiktoken("o200k_base", prompt("\n".join(lines)))
    assert sorted(counter._lines) == sorted([lines[-1] + "\n", "</conversation>"])
