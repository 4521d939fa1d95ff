"""Who calls the memory tools offline: a deterministic rule policy, the baseline a real model is compared with.

`MemoryRulePolicy` looks only at the user message the model is about to answer (the last
message of the request; after a tool round it is a tool result, so the policy stops):

- ``memory_search`` when the user asks about the past: a question ("?", or an opening
  who/what/when/where/which/did/do/have...) that refers back ("remember", "last time",
  "did I", "told you", "ago", "last week"...); the query is the question itself;
- ``memory_save`` when the user states something durable about themselves: the first sentence
  that auto-extraction would not skip, is not a question, speaks in the first person singular
  (`FIRST_PERSON_SINGULAR`: about the user, not "we"), and is a FACT or PREFERENCE by the
  extraction rules (EPISODE and PROCEDURE statements are time-bound, the document's "有时效性");
  its content is that sentence, prefixed with the speaker as extraction does.

Both may fire on one message (search first). Singular because "we" statements, saved too, crowd
the top of retrieval: on locomo_dev7 (longterm=locomo) they add 155 saves and recall@10 falls from
0.683 to 0.677. Beyond the document: it names no policy; this
one is a transparent baseline, as the extractive summarizer is for summaries.
`model_or_rules(llm)` is the `policy=auto` choice: the model's own tool calling when the
backend has it (litellm), these rules otherwise.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from memlab.llm.base import ChatModel
from memlab.llm.extract_rules import memory_type
from memlab.longterm.extraction import should_skip_extraction
from memlab.longterm.tools import MEMORY_SAVE, MEMORY_SEARCH
from memlab.messages import Message, ToolCall
from memlab.runtime.agent import CallContext
from memlab.runtime.react import ModelToolPolicy, ToolPolicy
from memlab.text import iter_sentences, speaks_in_first_person, split_sentences
from memlab.vocabulary import FIRST_PERSON_SINGULAR, PAST_REFERENCE, QUESTION_START

DURABLE_TYPES = ("FACT", "PREFERENCE")
# `durable_statement` splits a message of up to this many characters whole (pysbd: about 0.3 CPU s at most).
WHOLE_SPLIT_CHARS = 16_384
SEARCH_LIMIT = 5


def asks_about_past(text: str) -> bool:
    """A question that refers back to something said or done before: the rule policy searches memory then.

    Args:
        text: The user's message.

    Returns:
        Whether it asks about the past.
    """
    question = "?" in text or "？" in text or bool(QUESTION_START.match(text))
    return question and bool(PAST_REFERENCE.search(text))


def durable_statement(message: Message) -> str | None:
    """The first sentence of `message` worth saving as a FACT or PREFERENCE (see the module docstring).

    A message of up to `WHOLE_SPLIT_CHARS` is split whole (pysbd's sentences exactly); a longer one a window at a
    time (`iter_sentences`), since pysbd's time grows with the square of a text's length (200,000 characters:
    minutes). Beyond the design documents, and an approximation there: a quoted passage or a numbered list that
    spans a window's edge may be cut into other sentences than a whole split gives.

    Args:
        message: A user message.

    Returns:
        The sentence the rule policy saves with memory_save, or None.
    """
    text = message.text
    for sentence in split_sentences(text) if len(text) <= WHOLE_SPLIT_CHARS else iter_sentences(text):
        s = sentence.strip()
        if not s or s.endswith(("?", "？")) or not speaks_in_first_person(s, FIRST_PERSON_SINGULAR):
            continue
        if should_skip_extraction(Message(role="user", content=s)) is not None:
            continue
        if memory_type(s) in DURABLE_TYPES:
            return s
    return None


class MemoryRulePolicy:
    """The offline tool policy (see the module docstring); call ids are ``call_<turn>_<n>``."""

    def choose(
        self, request: Sequence[Message], tools: Sequence[Mapping[str, Any]], ctx: CallContext
    ) -> tuple[ToolCall, ...]:
        offered = {str(t.get("function", {}).get("name")) for t in tools}
        last = request[-1] if request else None
        if last is None or last.role != "user" or not last.text.strip():
            return ()
        calls: list[tuple[str, dict[str, Any]]] = []
        if MEMORY_SEARCH in offered and asks_about_past(last.text):
            calls.append((MEMORY_SEARCH, {"query": last.text.strip(), "limit": SEARCH_LIMIT}))
        statement = durable_statement(last) if MEMORY_SAVE in offered else None
        if statement is not None:
            content = f"{last.speaker}: {statement}" if last.speaker else statement
            calls.append((MEMORY_SAVE, {"content": content, "type": memory_type(statement)}))
        return tuple(
            ToolCall(id=f"call_{ctx.turn}_{n}", name=name, arguments=json.dumps(args, ensure_ascii=False))
            for n, (name, args) in enumerate(calls)
        )


def model_or_rules(llm: ChatModel | None = None) -> ToolPolicy:
    """`policy=auto`: the model decides when its backend does tool calling, the rules otherwise.

    Args:
        llm: The run's model (None: the rules).

    Returns:
        A `ModelToolPolicy` or a `MemoryRulePolicy`.
    """
    if llm is not None and getattr(llm, "supports_tools", False):
        return ModelToolPolicy(llm)
    return MemoryRulePolicy()
