"""Rule-based memory extraction: what the offline extractive backend answers to `extract_memories`.

Transparent rules over transcript lines, no model: a line becomes a memory when it carries
content words and speaks about someone (first person, second person or a name); its type is
the first rule that fires, in this order:

- PROCEDURE: a resolved step ("fixed it by", "solved", "the trick was", "managed to");
- PREFERENCE: a preference verb ("I love", "prefer", "my favorite", "can't stand", 喜欢);
- EPISODE: a dated event (yesterday, last week, ago, a month or weekday, a year, 昨天);
- FACT: any other first-person statement, or an informative line about someone.

A short reply to the line before it (a question from the other speaker) is merged with that
question, so "Yes, last Sunday." keeps what it answers; its evidence is both lines. Every
informative line is kept: this is a recall-oriented extractor (the README says so).

>>> from memlab.llm.prompts import TranscriptLine
>>> extract_memories([TranscriptLine("D1:3", "Ann", "I went to a pottery class yesterday.")])
[{'type': 'EPISODE', 'content': 'Ann: I went to a pottery class yesterday.', 'evidence': ['D1:3']}]
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence

from memlab.llm.prompts import TranscriptLine
from memlab.text import content_words as text_content_words
from memlab.text import speaks_in_first_person
from memlab.vocabulary import DATED, FILLER_WORDS, FUNCTION_WORDS, PREFERENCE_CUE, PROCEDURE_CUE, SECOND_PERSON

MIN_CONTENT_WORDS = 2  # fewer content words than this carry nothing worth remembering
SHORT_REPLY_WORDS = 8  # a reply this short is read together with the question it answers

_NOT_CONTENT = FUNCTION_WORDS | FILLER_WORDS
# What extraction counts as content: `memlab.text.content_words` without grammar and without filler.
content_words = functools.partial(text_content_words, drop=_NOT_CONTENT)
_NAME = re.compile(r"(?<![.!?]\s)(?<!^)\b[A-Z][a-z]{2,}")


def is_about_someone(text: str) -> bool:
    """First or second person, or a name after the first word."""
    return bool(speaks_in_first_person(text) or SECOND_PERSON.search(text) or _NAME.search(text))


def memory_type(text: str) -> str:
    """The first rule that fires (see the module docstring)."""
    for name, rule in (("PROCEDURE", PROCEDURE_CUE), ("PREFERENCE", PREFERENCE_CUE), ("EPISODE", DATED)):
        if rule.search(text):
            return name
    return "FACT"


def extract_memories(lines: Sequence[TranscriptLine]) -> list[dict[str, object]]:
    """``[{type, content, evidence}]`` for the informative lines, in transcript order."""
    out: list[dict[str, object]] = []
    for i, line in enumerate(lines):
        prev = lines[i - 1] if i > 0 else None
        if (
            prev is not None
            and prev.speaker != line.speaker
            and prev.text.rstrip().endswith("?")
            and len(line.text.split()) <= SHORT_REPLY_WORDS
        ):
            text = f"{prev.text} {line.text}"
            content = f"{prev.speaker}: {prev.text} {line.speaker}: {line.text}"
            evidence = [e for e in (prev.id, line.id) if e]
        else:
            text, content, evidence = line.text, f"{line.speaker}: {line.text}", [line.id] if line.id else []
        if len(content_words(text)) < MIN_CONTENT_WORDS or not is_about_someone(text):
            continue
        out.append({"type": memory_type(text), "content": content, "evidence": evidence})
    return out
