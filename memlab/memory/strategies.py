"""The Memory layer's strategies: TRIM, SUMMARIZE, DELETE, FILTER on a session's stored messages.

Unlike the Context layer ("a cropped photo"), these edit the stored history itself ("the edited
film; the original is gone"): `MemoryCleanupService` writes their result back. Each is a pure
function of a message list; the classes only bind the configured parameters.

Deletion here is irreversible, so where a cut would split a tool exchange (an assistant
`tool_calls` message and its results) the whole exchange is kept; the design document does not
say, and keeping errs on the side of not losing data.

>>> from memlab.messages import Message
>>> ms = [Message(role="user", content=f"msg{i}") for i in range(1, 9)]
>>> [m.text for m in keep_latest(ms, 5)]
['msg4', 'msg5', 'msg6', 'msg7', 'msg8']
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from memlab.context.summarize import DEFAULT_KEEP_LAST as DEFAULT_SUMMARY_KEEP_LAST
from memlab.context.summarize import DEFAULT_THRESHOLD as DEFAULT_SUMMARY_THRESHOLD
from memlab.context.trim import DEFAULT_KEEP_FIRST, DEFAULT_KEEP_LAST
from memlab.errors import MemlabError
from memlab.llm.base import TASK_MEMORY_SUMMARY, ChatModel
from memlab.llm.prompts import MEMORY_SUMMARY_PREFIX, check_language
from memlab.messages import Message, MessageLike, as_messages
from memlab.summary import LAYER_MEMORY, MAX_CONVERSATION_CHARS, write_summary
from memlab.text import CJK
from memlab.tokens import TokenCounter, resolve_counter
from memlab.units import message_units

# Design document, Memory layer DELETE: "DELETE 策略 (keepLatest = 5)". TRIM and SUMMARIZE take the
# Context layer's defaults ("算法与 Context 层 TRIM 相同"; SUMMARIZE "与 Context 版类似").
DEFAULT_KEEP_LATEST = 5
# Ours: the counter that checks a summary is not longer than its source (config: the run's tokenizer).
DEFAULT_SUMMARY_COUNTER = "cl100k_base"
# The memory layer's fallback: keep the stored history as it is.
FALLBACK_UNCHANGED = "unchanged"

Predicate = Callable[[Message], bool]


@runtime_checkable
class MemoryStrategy(Protocol):
    """`apply(messages) -> messages`: the new stored history (the input stays unchanged)."""

    name: str

    def apply(self, messages: Sequence[MessageLike]) -> list[Message]: ...


def _keep_indices(messages: Sequence[Message], keep: Callable[[int, Message], bool]) -> list[Message]:
    """Every unit that has at least one message `keep` accepts, whole, in order."""
    out: list[Message] = []
    at = 0
    for unit in message_units(messages):
        if any(keep(at + i, m) for i, m in enumerate(unit)):
            out.extend(unit)
        at += len(unit)
    return out


def trim(
    messages: Sequence[MessageLike], keep_first: int = DEFAULT_KEEP_FIRST, keep_last: int = DEFAULT_KEEP_LAST
) -> list[Message]:
    """Keep the first `keep_first` and the last `keep_last` messages, delete the middle.

    Args:
        messages: The stored history, oldest first.
        keep_first: Opening messages kept.
        keep_last: Newest messages kept.

    >>> ms = [Message(role="user", content=str(i)) for i in range(1, 11)]
    >>> [m.text for m in trim(ms, 2, 3)]
    ['1', '2', '8', '9', '10']
    """
    ms = as_messages(messages)
    n = len(ms)
    return _keep_indices(ms, lambda i, _m: i < keep_first or i >= n - keep_last)


def keep_latest(messages: Sequence[MessageLike], n: int = DEFAULT_KEEP_LATEST) -> list[Message]:
    """DELETE: keep only the newest `n` messages.

    Args:
        messages: The stored history, oldest first.
        n: Newest messages kept.
    """
    ms = as_messages(messages)
    total = len(ms)
    return _keep_indices(ms, lambda i, _m: i >= total - n)


def keep_matching(messages: Sequence[MessageLike], predicate: Predicate) -> list[Message]:
    """FILTER: keep what `predicate` accepts (a tool exchange stays whole if it accepts any part of it).

    Args:
        messages: The stored history, oldest first.
        predicate: Accepts or rejects one message.
    """
    return _keep_indices(as_messages(messages), lambda _i, m: bool(predicate(m)))


@dataclass(frozen=True)
class KeepRule:
    """One FILTER rule: a message of one of `roles` (any role if empty) whose text has one of
    `keywords` or matches one of `patterns` (any text if both are empty).

    Args:
        roles: Roles the rule applies to (empty: any).
        keywords: Substrings, one of which the text must hold.
        patterns: Regular expressions, one of which the text must match.
    """

    roles: tuple[str, ...] = ()
    keywords: tuple[str, ...] = ()
    patterns: tuple[re.Pattern[str], ...] = ()

    def __call__(self, m: Message) -> bool:
        if self.roles and m.role not in self.roles:
            return False
        if not self.keywords and not self.patterns:
            return True
        text = m.text
        return any(k in text for k in self.keywords) or any(p.search(text) for p in self.patterns)


def rules_predicate(rules: Iterable[Mapping[str, Any] | KeepRule]) -> Predicate:
    """A predicate from config rules (`roles`, `keywords`, `patterns`): keep what any rule accepts.

    Args:
        rules: Mappings with `roles`, `keywords`, `patterns` (or `KeepRule`s).

    >>> keep = rules_predicate([{"roles": ["user"]}, {"roles": ["assistant"], "keywords": ["重要"]}])
    >>> keep(Message(role="assistant", content="这很重要")), keep(Message(role="assistant", content="ok"))
    (True, False)
    """
    built = keep_rules(rules)
    return lambda m: any(rule(m) for rule in built)


def keep_rules(rules: Iterable[Mapping[str, Any] | KeepRule]) -> tuple[KeepRule, ...]:
    """Config rules (`roles`, `keywords`, `patterns`) as `KeepRule`s; a bad pattern is a MemlabError naming it."""
    built: list[KeepRule] = []
    for i, raw in enumerate(rules):
        if isinstance(raw, KeepRule):
            built.append(raw)
            continue
        patterns = []
        for p in raw.get("patterns") or ():
            try:
                patterns.append(re.compile(str(p)))
            except re.error as e:
                raise MemlabError(
                    f"memory.strategy.rules[{i}].patterns: {p!r} is not a regular expression ({e})"
                ) from e
        built.append(
            KeepRule(
                roles=tuple(str(r) for r in raw.get("roles") or ()),
                keywords=tuple(str(k) for k in raw.get("keywords") or ()),
                patterns=tuple(patterns),
            )
        )
    return tuple(built)


_CJK = re.compile(f"[{CJK}]")
_LATIN = re.compile(r"[A-Za-z]")


def detect_language(texts: Iterable[str]) -> str:
    """ "zh" when CJK characters outnumber Latin letters, else "en"."""
    joined = "".join(texts)
    return "zh" if len(_CJK.findall(joined)) > len(_LATIN.findall(joined)) else "en"


@dataclass(frozen=True)
class TrimStrategy:
    """TRIM: keep the first `keep_first` and the last `keep_last` messages.

    Args:
        keep_first: Opening messages kept.
        keep_last: Newest messages kept. Parameters: the fields of `memlab.memory.schemas.TrimStrategyConfig`, each
            documented there once.
        name: The name the run records the strategy under.
    """

    keep_first: int = DEFAULT_KEEP_FIRST
    keep_last: int = DEFAULT_KEEP_LAST
    name: str = "trim"

    def apply(self, messages: Sequence[MessageLike]) -> list[Message]:
        return trim(messages, self.keep_first, self.keep_last)


@dataclass(frozen=True)
class DeleteStrategy:
    """DELETE: keep only the newest `keep_latest` messages.

    Args:
        keep_latest: Newest messages kept. Parameters: the fields of `memlab.memory.schemas.DeleteStrategyConfig`,
            each documented there once.
        name: The name the run records the strategy under.
    """

    keep_latest: int = DEFAULT_KEEP_LATEST
    name: str = "delete"

    def apply(self, messages: Sequence[MessageLike]) -> list[Message]:
        return keep_latest(messages, self.keep_latest)


class FilterStrategy:
    """FILTER: keep the messages a predicate accepts: from config, `rules`; from Python, any callable.

    Args:
        rules: Config rules (`roles`, `keywords`, `patterns`): a message any rule accepts is kept. Parameters: the
            fields of `memlab.memory.schemas.FilterStrategyConfig`, each documented there once.
        predicate: From Python: any callable that accepts or rejects a message (instead of `rules`).
    """

    name = "filter"

    def __init__(self, rules: Iterable[Mapping[str, Any] | KeepRule] = (), predicate: Predicate | None = None) -> None:
        self.rules = keep_rules(rules)  # what the predicate keeps, when built from config
        if predicate is None:
            if not self.rules:
                raise MemlabError("memory.strategy.rules is empty: FILTER needs at least one rule (or a predicate)")
            predicate = rules_predicate(self.rules)
        self.predicate = predicate

    def apply(self, messages: Sequence[MessageLike]) -> list[Message]:
        return keep_matching(messages, self.predicate)


class SummarizeStrategy:
    """SUMMARIZE: fold all but the newest messages into one persistent-memory summary message.

    Parameters: the fields of `memlab.memory.schemas.SummarizeStrategyConfig`, each documented there once.
    """

    name = "summarize"

    def __init__(
        self,
        llm: ChatModel | None,
        threshold: int = DEFAULT_SUMMARY_THRESHOLD,
        keep_last: int = DEFAULT_SUMMARY_KEEP_LAST,
        language: str = "auto",
        max_conversation_chars: int = MAX_CONVERSATION_CHARS,
        max_tokens: int | None = None,
        counter: str | TokenCounter = DEFAULT_SUMMARY_COUNTER,
    ) -> None:
        if llm is None:
            raise MemlabError("memory=summarize needs a chat model: set llm (e.g. llm=extractive)")
        if language != "auto":
            check_language(language)
        self.llm = llm
        self.threshold = threshold
        self.keep_last = keep_last
        self.language = language
        self.max_conversation_chars = max_conversation_chars
        self.max_tokens = max_tokens
        self.counter = resolve_counter(counter)

    def apply(self, messages: Sequence[MessageLike]) -> list[Message]:
        """Past `threshold` messages, replace all but the last `keep_last` by one persistent-memory summary.

        The summary is a system message prefixed ``[持久化记忆摘要] `` (Chinese prompt) or
        ``[Persistent memory summary] `` (English), written with the persistent-memory prompt
        (preferences, habits, durable facts) through `write_summary`, which cuts the text summarized
        to `max_conversation_chars` and checks the summary as on every layer (non-empty, fewer
        `counter` tokens than the messages it replaces). If the model fails or the summary is
        rejected, the history is returned unchanged and a FALLBACK event (action ``unchanged``) says
        so: the Context layer's "first 3 messages" fallback would here delete the rest for good.
        """
        ms = as_messages(messages)
        if len(ms) <= self.threshold:
            return ms
        units = message_units(ms)
        tail: list[Message] = []
        while units and len(tail) < self.keep_last:
            tail = units.pop() + tail
        head = [m for u in units for m in u]
        if not head:
            return ms
        lang = detect_language(m.text for m in head) if self.language == "auto" else check_language(self.language)
        folded = write_summary(
            head,
            llm=self.llm,
            counter=self.counter,
            layer=LAYER_MEMORY,
            strategy="summarize",
            fallback=FALLBACK_UNCHANGED,
            task=TASK_MEMORY_SUMMARY,
            language=lang,
            prefix=MEMORY_SUMMARY_PREFIX[lang],
            max_conversation_chars=self.max_conversation_chars,
            summary_tokens=self.max_tokens,
        )
        return ms if folded.message is None else [folded.message, *tail]
