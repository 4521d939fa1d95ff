"""Injection: retrieved memories as one ``<long_term_memory>`` block in the system prompt.

The design document's format, one numbered line per memory with its type and relevance::

    <long_term_memory>
    以下是你对该用户的长期记忆：
    1. [FACT] 用户是Java后端开发者 (相关度: 0.92)
    </long_term_memory>

Memory text is data, not markup: `escape_content` folds it to one line and escapes ``&``,
``<`` and ``>``, so no content can close the block, open another tag or add a line.

>>> print(render_block([("FACT", "The user is a Java backend developer", 0.92)]))
<long_term_memory>
Here is what you remember about this user:
1. [FACT] The user is a Java backend developer (relevance: 0.92)
</long_term_memory>
"""

from __future__ import annotations

import html
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from memlab.llm.prompts import check_language
from memlab.messages import Message, system
from memlab.trace import LONGTERM_INJECT, emit

if TYPE_CHECKING:
    from memlab.runtime.agent import CallContext

BLOCK_TAG = "long_term_memory"
_HEADER = {"en": "Here is what you remember about this user:", "zh": "以下是你对该用户的长期记忆："}
_RELEVANCE = {"en": "relevance", "zh": "相关度"}
_LINE = re.compile(
    r"^(?P<n>\d+)\. \[(?P<type>[A-Z]+)\] (?P<content>.*) \((?:relevance|相关度): (?P<score>-?\d+\.\d\d)\)$"
)


def escape_content(text: str) -> str:
    """One line, with ``&``, ``<`` and ``>`` escaped (quotes are harmless here and stay).

    Args:
        text: A memory's content, which may hold markup that must not close the block.

    Returns:
        The escaped line.
    """
    return html.escape(" ".join(text.split()), quote=False)


def render_block(memories: Sequence[tuple[str, str, float]], language: str = "en") -> str:
    """The block for ``(type, content, relevance)`` triples, best first ("" when there are none).

    Args:
        memories: ``(type, content, relevance)`` of each memory to inject, best first.
        language: The header's language: en or zh.

    Returns:
        The ``<long_term_memory>`` block.
    """
    check_language(language)
    if not memories:
        return ""
    lines = [
        f"{i}. [{kind}] {escape_content(content)} ({_RELEVANCE[language]}: {score:.2f})"
        for i, (kind, content, score) in enumerate(memories, start=1)
    ]
    return "\n".join([f"<{BLOCK_TAG}>", _HEADER[language], *lines, f"</{BLOCK_TAG}>"])


def parse_block(block: str) -> list[tuple[str, str, float]]:
    """The triples back from a block (the inverse of `render_block`, content unescaped).

    Raises `ValueError` when the block is not exactly one well-formed block.

    Args:
        block: A block `render_block` wrote.

    Returns:
        ``(type, content, relevance)`` of each line, in order.
    """
    rows = block.split("\n")
    if len(rows) < 3 or rows[0] != f"<{BLOCK_TAG}>" or rows[-1] != f"</{BLOCK_TAG}>" or rows[1] not in _HEADER.values():
        raise ValueError("not a long-term memory block")
    out = []
    for expected, row in enumerate(rows[2:-1], start=1):
        match = _LINE.match(row)
        if match is None or int(match["n"]) != expected:
            raise ValueError(f"malformed memory line {row!r}")
        out.append((match["type"], html.unescape(match["content"]), float(match["score"])))
    return out


def inject(messages: Sequence[Message], block: str) -> Sequence[Message]:
    """`messages` with `block` appended to the system prompt (a new system message if there is none)."""
    if not block:
        return messages
    if messages and messages[0].role == "system":
        head = messages[0]
        return [replace(head, content=f"{head.text}\n\n{block}" if head.text else block), *messages[1:]]
    return [system(block), *messages]


@dataclass
class InjectStage:
    """The request stage at order 20 (ORDER_LONGTERM_INJECT) that adds the current block."""

    order: int
    block: str = ""

    def process(self, messages: Sequence[Message], ctx: CallContext) -> Sequence[Message]:
        if self.block and ctx.counter is not None:  # what the block costs this request
            emit(LONGTERM_INJECT, tokens=ctx.counter.count_text(self.block))
        return inject(messages, self.block)
