"""Automatic extraction (channel A): the skip filter before any model call, the prompt, the parse.

`should_skip_extraction` is the design document's shouldSkipExtraction: layered filters,
cheapest first, so that small talk never costs a model call. memlab's layers, in order:
pure tool output, too short, greetings and small talk, nothing personal (no first or second
person, no name), and a repeat of one of the last turns. Each skipped turn names its layer.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Sequence

from memlab.llm.base import TASK_EXTRACT_MEMORIES, ChatModel, LLMError
from memlab.llm.extract_rules import content_words, is_about_someone
from memlab.llm.prompts import build, render_transcript
from memlab.longterm.model import MemoryDraft, MemoryType
from memlab.longterm.terms import content_problem
from memlab.messages import Message
from memlab.text import word_key, words
from memlab.vocabulary import SMALL_TALK

SKIP_TOOL_OUTPUT = "tool_output"
SKIP_TOO_SHORT = "too_short"
SKIP_SMALL_TALK = "small_talk"
SKIP_NOT_PERSONAL = "not_personal"
SKIP_REPEAT = "repeat"
SKIP_LAYERS = (SKIP_TOOL_OUTPUT, SKIP_TOO_SHORT, SKIP_SMALL_TALK, SKIP_NOT_PERSONAL, SKIP_REPEAT)

MIN_WORDS = 3  # shorter turns ("ok", "thanks!", "好的") never hold a durable memory; a CJK character is a word
REPEAT_WINDOW = 3  # a turn equal to one of the last this many turns adds nothing


def should_skip_extraction(message: Message, recent: Sequence[Message] = ()) -> str | None:
    """The first layer that rejects `message` (one of `SKIP_LAYERS`), or None to extract it.

    Args:
        message: A turn of the round just ended.
        recent: The namespace's last turns; a turn equal to one of the last `REPEAT_WINDOW` is a repeat.

    Returns:
        The rejecting layer's name, or None.

    >>> should_skip_extraction(Message(role="user", content="Hi! Thanks so much, see you later!"))
    'small_talk'
    >>> should_skip_extraction(Message(role="user", content="I moved to Oslo last spring.")) is None
    True
    """
    text = message.text.strip()
    if message.role == "tool" or (message.tool_calls and not text):
        return SKIP_TOOL_OUTPUT
    layer = _text_layer(text)
    if layer is not None:
        return layer
    key = word_key(text)
    if any(word_key(m.text) == key for m in recent[-REPEAT_WINDOW:]):
        return SKIP_REPEAT
    return None


@functools.lru_cache(maxsize=1 << 16)
def _text_layer(text: str) -> str | None:
    """The first layer that rejects `text` by its words alone (too short, small talk, nothing personal), memoized:
    runs that replay the same dialogues ask it of the same turns."""
    if len(words(text)) < MIN_WORDS:
        return SKIP_TOO_SHORT
    if len(content_words(SMALL_TALK.sub(" ", text))) < 2:
        return SKIP_SMALL_TALK
    if not is_about_someone(text):
        return SKIP_NOT_PERSONAL
    return None


def extraction_prompt(turns: Sequence[Message], language: str = "en") -> list[Message]:
    """The `extract_memories` prompt over `turns` (a ``[id] speaker: text`` transcript)."""
    return build(TASK_EXTRACT_MEMORIES, render_transcript(turns), language)


def parse_memories(text: str, turn_ids: Sequence[str]) -> list[MemoryDraft]:
    """The drafts in a model's JSON answer; evidence is kept to the ids it was shown.

    A draft whose evidence names none of them cites every turn it was shown (it came from
    them); an element without content, with content `save` would refuse (`content_problem`: no words, a
    lone surrogate) or with an unknown type is dropped. Anything that is
    not a JSON array raises `LLMError`, so callers treat it like a failed call.
    """
    start, end = text.find("["), text.rfind("]")
    try:
        raw = json.loads(text[start : end + 1]) if start >= 0 and end > start else None
    except json.JSONDecodeError:
        raw = None
    if not isinstance(raw, list):
        raise LLMError(f"memory extraction answer is not a JSON array: {text[:80]!r}")
    known = [i for i in turn_ids if i]
    drafts = []
    for item in raw:
        if not isinstance(item, dict):
            continue
        content = " ".join(str(item.get("content") or "").split())
        if content_problem(content) is not None:  # what `save` would refuse: no words, or not valid text
            continue
        try:
            kind = MemoryType.parse(str(item.get("type", "FACT")))
        except ValueError:
            continue
        cited = [str(e) for e in item.get("evidence") or () if str(e) in known]
        drafts.append(MemoryDraft(kind, content, tuple(dict.fromkeys(cited or known))))
    return drafts


def extract(llm: ChatModel, turns: Sequence[Message], language: str = "en") -> list[MemoryDraft]:
    """Ask `llm` for the memories in `turns` (raises `LLMError` when the call or its answer fails)."""
    completion = llm.complete(extraction_prompt(turns, language), task=TASK_EXTRACT_MEMORIES)
    return parse_memories(completion.text, [t.id or "" for t in turns])
