"""Every prompt memlab sends, in English and Chinese, versioned, in one place.

The context summary and the persistent-memory summary differ as the first design document
says: the first keeps the conversation coherent ("总结对话关键信息，保留上下文连贯性"), the second
extracts the user's preferences, habits and durable facts ("提取用户偏好、习惯、重要事实，用于长期记忆").
Conversations are rendered as a transcript, one ``[id] speaker: text`` line per message, between
``<conversation>`` tags, so that any backend (the extractive one included) can read ids back.

>>> from memlab.messages import Message
>>> t = render_transcript([Message(role="user", content="I moved to Oslo.", id="D1:2", speaker="Ann")])
>>> parse_transcript(t)
[TranscriptLine(id='D1:2', speaker='Ann', text='I moved to Oslo.')]
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from dataclasses import dataclass

from memlab.errors import MemlabError
from memlab.llm.base import (
    TASK_ANSWER,
    TASK_CONTEXT_SUMMARY,
    TASK_EXTRACT_MEMORIES,
    TASK_JUDGE,
    TASK_MEMORY_SUMMARY,
)
from memlab.messages import Message, MessageLike, as_message

LANGUAGES: tuple[str, ...] = ("en", "zh")

# Memory SUMMARIZE's prefix (design document: "[持久化记忆摘要] " + summaryContent).
MEMORY_SUMMARY_PREFIX = {"en": "[Persistent memory summary] ", "zh": "[持久化记忆摘要] "}
CONTEXT_SUMMARY_PREFIX = {"en": "[Conversation summary] ", "zh": "[对话摘要] "}

_SYSTEM = {
    TASK_CONTEXT_SUMMARY: {
        "en": (
            "Summarize the key information of the conversation below so that it can continue coherently: "
            "who said what, decisions, open questions, names, dates and numbers. Be concise; do not invent facts."
        ),
        "zh": "请总结以下对话的关键信息，保留上下文连贯性：谁说了什么、做出的决定、未解决的问题、人名、日期和数字。简明扼要，不要编造事实。",
    },
    TASK_MEMORY_SUMMARY: {
        "en": (
            "Extract the user's preferences, habits and important durable facts from the conversation below, "
            "for long-term memory. Keep names, dates and numbers. Omit small talk. Be concise."
        ),
        "zh": "请从以下对话中提取用户偏好、习惯、重要事实，用于长期记忆。保留人名、日期和数字，省略闲聊，简明扼要。",
    },
    TASK_EXTRACT_MEMORIES: {
        "en": (
            "Extract durable memories about the speakers from the conversation below. Answer with a JSON array only; "
            'each element is {"type": "FACT"|"PREFERENCE"|"PROCEDURE"|"EPISODE", "content": "<one sentence>", '
            '"evidence": ["<id of each line it comes from>"]}. FACT: stable facts about a person; PREFERENCE: likes, '
            "dislikes, wishes; PROCEDURE: how something was done or solved; EPISODE: a dated event. "
            "Answer [] if there is nothing worth remembering."
        ),
        "zh": (
            "从以下对话中提取关于说话人的长期记忆。只输出一个 JSON 数组，每个元素为 "
            '{"type": "FACT"|"PREFERENCE"|"PROCEDURE"|"EPISODE", "content": "<一句话>", "evidence": ["<来源行的 id>"]}。'
            "FACT：稳定的个人事实；PREFERENCE：喜好与意愿；PROCEDURE：操作步骤或解决方法；EPISODE：有时间的事件。没有值得记住的内容时输出 []。"
        ),
    },
    TASK_ANSWER: {
        "en": "Answer the question from the conversation and memories you are given. Answer in a few words.",
        "zh": "根据给出的对话和记忆回答问题，用几个词回答。",
    },
    TASK_JUDGE: {
        "en": (
            "You grade answers. Given a question, a gold answer and a generated answer, reply with exactly "
            "CORRECT if the generated answer means the same as the gold answer, else WRONG."
        ),
        "zh": "你负责评分。给定问题、标准答案和生成的答案，若生成的答案与标准答案意思相同，只回复 CORRECT，否则只回复 WRONG。",
    },
}

_LINE = re.compile(r"^\[(?P<id>[^\]]*)\] (?P<speaker>[^:]*): (?P<text>.*)$")


@dataclass(frozen=True)
class TranscriptLine:
    """One message as a transcript line: its source id (may be empty), speaker and one-line text."""

    id: str
    speaker: str
    text: str


def check_language(language: str, key: str = "language") -> str:
    """`language` if a prompt is written in it, else a `MemlabError` naming the setting `key` (at build time)."""
    if language not in LANGUAGES:
        raise MemlabError(f"{key}: {language!r}; expected one of {', '.join(LANGUAGES)}")
    return language


def render_transcript(messages: Sequence[MessageLike], max_chars: int | None = None) -> str:
    """``[id] speaker: text`` per message; newlines inside a message are folded to spaces.

    With `max_chars`, rendering stops at the first line that makes the text longer than that: its
    first `max_chars` characters are the whole transcript's, and it is longer exactly when that is.
    """
    if max_chars is None:
        return "\n".join(transcript_line(as_message(raw)) for raw in messages)
    lines, length = [], -1
    for raw in messages:
        lines.append(line := transcript_line(as_message(raw)))
        length += len(line) + 1
        if length > max_chars:
            break
    return "\n".join(lines)


@functools.lru_cache(maxsize=1 << 16)
def transcript_line(m: Message) -> str:
    """One message's transcript line, memoized: a replay renders the same messages on every call."""
    text = m.text
    if m.tool_calls:
        text = (text + " " if text else "") + " ".join(f"<call {c.name} {c.arguments}>" for c in m.tool_calls)
    return f"[{m.id or ''}] {m.speaker or m.name or m.role}: {' '.join(text.split())}"


def parse_transcript(text: str) -> list[TranscriptLine]:
    """The lines of a transcript (the inverse of `render_transcript`); other lines are ignored."""
    out = []
    for line in text.splitlines():
        match = _LINE.match(line)
        if match:
            out.append(TranscriptLine(match["id"], match["speaker"], match["text"]))
    return out


def conversation_block(transcript: str) -> str:
    return f"<conversation>\n{transcript}\n</conversation>"


def transcript_of(messages: Sequence[MessageLike]) -> str:
    """The transcript inside the last message's ``<conversation>`` block ("" if there is none)."""
    if not messages:
        return ""
    body = as_message(messages[-1]).text
    start, end = body.find("<conversation>\n"), body.rfind("\n</conversation>")
    return body[start + len("<conversation>\n") : end] if start >= 0 and end > start else ""


def source_text(messages: Sequence[MessageLike]) -> str:
    """What a task reads: the transcript when the last message has a ``<conversation>`` block, else its text."""
    if not messages:
        return ""
    body = as_message(messages[-1]).text
    return transcript_of(messages) if "<conversation>\n" in body else body


def build(task: str, transcript: str, language: str = "en", question: str | None = None) -> list[Message]:
    """The messages for `task` over a rendered transcript (and a question, for answer tasks)."""
    check_language(language)
    if task not in _SYSTEM:
        raise ValueError(f"no prompt for task {task!r}; expected one of {', '.join(_SYSTEM)}")
    user = conversation_block(transcript)
    if question is not None:
        user += f"\n\n{'问题' if language == 'zh' else 'Question'}: {question}"
    return [Message(role="system", content=_SYSTEM[task][language]), Message(role="user", content=user)]


def judge_prompt(question: str, gold: str, generated: str, language: str = "en") -> list[Message]:
    """The LLM-judge prompt (answer evaluation)."""
    check_language(language)
    body = f"Question: {question}\nGold answer: {gold}\nGenerated answer: {generated}"
    return [Message(role="system", content=_SYSTEM[TASK_JUDGE][language]), Message(role="user", content=body)]
