"""Token counters: exact (tiktoken), the design document's estimate, and litellm for other providers.

Every counter caches its count per distinct `Message` (messages are frozen and hashable),
so a replay tokenizes each message once per run however often strategies ask.
`get_counter(spec)` returns one shared counter per spec for the whole process.

>>> get_counter("estimate").count(Message(role="user", content="x" * 25))  # 25 / 2.5 + 4
14
"""

from __future__ import annotations

import contextlib
import functools
import importlib.util
import itertools
import os
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from memlab.errors import MemlabError
from memlab.messages import Message, MessageView

if TYPE_CHECKING:
    import tiktoken

# Design document, SLIDING_WINDOW: "estimatedTokens = chars / 2.5 + 4 (每条消息固定开销)".
ESTIMATE_CHARS_PER_TOKEN = 2.5
ESTIMATE_MESSAGE_OVERHEAD = 4
# OpenAI chat format (tiktoken cookbook): each message costs 3 tokens of framing, a name 1 more,
# and every request 3 for priming the reply.
CHAT_TOKENS_PER_MESSAGE = 3
CHAT_TOKENS_PER_NAME = 1
CHAT_REPLY_PRIMING = 3
# OpenAI's rule for the tokens tool (function) definitions add to a request: OpenAI Cookbook, "How to count
# tokens with tiktoken", section 7 (`num_tokens_for_tools`), for gpt-4o and gpt-4o-mini (o200k_base):
# 7 per function, 3 before its properties, 3 per property, -3 per enum and 3 per enum value, 12 once at the end;
# gpt-3.5-turbo and gpt-4 (cl100k_base) open each function with 10 instead.
TOOL_FUNCTION_INIT = 7
TOOL_FUNCTION_INIT_CL100K = 10
TOOL_PROPERTIES_INIT = 3
TOOL_PROPERTY_KEY = 3
TOOL_ENUM_INIT = -3
TOOL_ENUM_ITEM = 3
TOOL_FUNCTIONS_END = 12

ENCODINGS = ("cl100k_base", "o200k_base", "p50k_base")
# How a token budget is counted (`context.counter`, `budget_counter`): the run's tokenizer or the document's estimate.
BUDGET_COUNTERS = ("exact", "estimate")


@runtime_checkable
class TokenCounter(Protocol):
    """Counts tokens of text, of one message (with framing) and of a request."""

    name: str

    def count_text(self, text: str) -> int: ...

    def count(self, message: Message) -> int: ...

    def count_request(self, messages: Iterable[Message]) -> int: ...


def message_text(m: Message) -> str:
    """The text a provider tokenizes for a message: content plus tool-call names and arguments."""
    if not m.tool_calls:
        return m.text
    return m.text + "".join(c.name + c.arguments for c in m.tool_calls)


def tool_schema_tokens(tools: Sequence[Mapping[str, Any]], counter: TokenCounter) -> int:
    """Prompt tokens the tool definitions add to a request, by OpenAI's published rule (0 for no tools).

    Per function, ``name:description`` (a final period dropped), and per top-level property
    ``key:type:description`` plus its enum values, each counted with `counter`, with the rule's
    fixed overheads (`TOOL_FUNCTION_INIT` ...). The rule reproduces the API's count on the Cookbook's
    worked example (101 prompt tokens on gpt-4o, 105 on gpt-4; tests/test_token_counters.py). It
    reads no other schema keys (defaults, bounds, nested objects), as OpenAI's rule does; other
    providers render tools their own way, and every counter but cl100k_base gets the gpt-4o figures.
    """
    if not tools:
        return 0
    function_init = TOOL_FUNCTION_INIT_CL100K if counter.name == "cl100k_base" else TOOL_FUNCTION_INIT
    total = TOOL_FUNCTIONS_END
    for tool in tools:
        function = tool["function"]
        description = str(function.get("description", "")).removesuffix(".")
        total += function_init + counter.count_text(f"{function['name']}:{description}")
        properties = (function.get("parameters") or {}).get("properties") or {}
        if properties:
            total += TOOL_PROPERTIES_INIT
        for key, prop in properties.items():
            total += TOOL_PROPERTY_KEY
            if "enum" in prop:
                total += TOOL_ENUM_INIT + sum(TOOL_ENUM_ITEM + counter.count_text(str(v)) for v in prop["enum"])
            description = str(prop.get("description", "")).removesuffix(".")
            total += counter.count_text(f"{key}:{prop.get('type', '')}:{description}")
    return total


class _CachedCounter:
    """Shared caching: `count` is computed once per distinct message, the cache's text bounded by `CACHE_CHARS`.

    The bound goes beyond the design documents: a message that changes on every call (per_task's summary,
    a line longer per finished sub-task) made the cache keep text quadratic in the dialogue's length
    (713 MB at 4,000 messages). Past the bound the cache is emptied, as `TiktokenCounter`'s line cache
    is, and the messages still in use are counted again once each: counts never change, only their cost.
    """

    name: str
    priming: int = 0
    # Characters of message text the cache may hold (16 to 64 MB): four times the text of a request that fills
    # a 1M-token window, so a replay's history is never counted twice for it.
    CACHE_CHARS = 1 << 24

    def __init__(self) -> None:
        self._cache: dict[Message, int] = {}
        self._cached_chars = 0

    def count_text(self, text: str) -> int:
        raise NotImplementedError

    def _count_uncached(self, m: Message) -> int:
        raise NotImplementedError

    def count(self, message: Message) -> int:
        n = self._cache.get(message)
        if n is None:
            n = self._count_uncached(message)
            size = len(message.text) + sum(len(c.name) + len(c.arguments) for c in message.tool_calls)
            if self._cached_chars + size > self.CACHE_CHARS:
                self._cache.clear()
                self._cached_chars = 0
            self._cache[message] = n
            self._cached_chars += size
        return n

    def count_messages(self, messages: Iterable[Message]) -> int:
        """Sum of per-message counts (additive, as SLIDING_WINDOW assumes)."""
        messages = list(messages)
        counts = list(map(self._cache.get, messages))  # C speed: in a replay most are counted already
        missing = counts.index(None) if None in counts else -1
        while missing >= 0:  # usually only the newest message
            counts[missing] = self.count(messages[missing])
            missing = counts.index(None, missing) if None in counts[missing:] else -1
        return sum(counts)  # type: ignore[arg-type]

    def count_request(self, messages: Iterable[Message]) -> int:
        """Tokens a provider bills for the request: messages plus reply priming."""
        return self.count_messages(messages) + self.priming

    def count_lines(self, lines: Sequence[str]) -> int:
        """``count_text("\\n".join(lines))``; counters that can add up cached per-line counts do."""
        return self.count_text("\n".join(lines))


class EstimateCounter(_CachedCounter):
    """The design document's estimator: ``int(chars / 2.5) + 4`` per message, no network, no vocabulary."""

    name = "estimate"

    def count_text(self, text: str) -> int:
        return int(len(text) / ESTIMATE_CHARS_PER_TOKEN)

    def count_lines(self, lines: Sequence[str]) -> int:
        return int((sum(map(len, lines)) + max(len(lines) - 1, 0)) / ESTIMATE_CHARS_PER_TOKEN)

    def _count_uncached(self, m: Message) -> int:
        return self.count_text(message_text(m)) + ESTIMATE_MESSAGE_OVERHEAD


def _bundled_tiktoken_dir() -> Path | None:
    """The folder of tiktoken files that the litellm wheel ships (found without importing litellm)."""
    spec = importlib.util.find_spec("litellm")
    if spec is None or not spec.submodule_search_locations:
        return None
    folder = Path(next(iter(spec.submodule_search_locations))) / "litellm_core_utils" / "tokenizers"
    return folder if folder.is_dir() else None


@contextlib.contextmanager
def _offline_tiktoken() -> Iterator[None]:
    """Point tiktoken's cache at the bundled files while an encoding loads, so it never downloads."""
    folder = _bundled_tiktoken_dir()
    if folder is None:
        yield
        return
    previous = os.environ.get("TIKTOKEN_CACHE_DIR")
    os.environ["TIKTOKEN_CACHE_DIR"] = str(folder)
    try:
        yield
    finally:
        if previous is None:
            os.environ.pop("TIKTOKEN_CACHE_DIR", None)
        else:
            os.environ["TIKTOKEN_CACHE_DIR"] = previous


@functools.cache
def load_encoding(name: str) -> tiktoken.Encoding:
    """A tiktoken `Encoding`, loaded from the files bundled with litellm (offline), its ranks parsed once per file."""
    import tiktoken

    from memlab.bpe_cache import cached_openai_encodings

    with _offline_tiktoken(), cached_openai_encodings():
        return tiktoken.get_encoding(name)


def _separable(line: str) -> bool:
    """Whether a line's tokens are the same alone as between newlines in a longer text.

    tiktoken splits text with a regex before BPE, and no piece of that split crosses a newline
    between two such lines except punctuation absorbing the newline after it (o200k also absorbs
    a "/" after that newline), so the count of ``"\\n".join(lines)`` is the sum of each line's count
    with its newline, the last without. tests/test_token_lines.py checks it on all three encodings.
    """
    return bool(line) and not line[0].isspace() and not line[-1].isspace() and line[0] != "/"


class TiktokenCounter(_CachedCounter):
    """Exact OpenAI counts: tiktoken tokens plus the chat format's per-message framing.

    Long multi-line texts (transcripts, the summarizer's prompts) are counted from cached per-line
    counts (see `_separable`), so a transcript that grew by one line costs one line's tokenization.
    """

    LINE_CACHE_SIZE = 1 << 17
    # Shorter texts are tokenized whole, once each (kept with the lines). A summary (about 1,100 characters) is
    # counted on every call that returns it, and its lines are the ones the summarizer counted: 8x faster from them.
    LONG_TEXT = 512
    # Texts this long keep their head for the next one to extend (`_count_long`): a transcript. The shorter
    # texts counted between a replay's summary prompts (the summary, an answer prompt) would replace it.
    HEAD_TEXT = 8192

    priming = CHAT_REPLY_PRIMING

    def __init__(self, encoding: str) -> None:
        super().__init__()
        if encoding not in ENCODINGS:
            raise ValueError(f"unknown tiktoken encoding {encoding!r}; expected one of {', '.join(ENCODINGS)}")
        self.name = encoding
        self._encode: Callable[[str], list[int]] = functools.partial(
            load_encoding(encoding).encode, disallowed_special=()
        )
        self._lines: dict[str, int] = {}
        # The last text of `HEAD_TEXT` characters or more counted line by line: its lines but the last, each with
        # its newline, and their tokens.
        self._head = ("", 0)

    def count_text(self, text: str) -> int:
        if len(text) >= self.LONG_TEXT:
            return self._count_long(text) if "\n" in text else len(self._encode(text))
        return self._line(text)  # short texts repeat (roles, tool schemas: 6 per model call): counted once

    def _count_long(self, text: str) -> int:
        """`count_lines` of the text's lines; a text that begins with the last long one's head counts only what follows.

        A growing prompt (the summarizer's: a transcript a line longer between ``<conversation>`` tags) keeps
        its earlier lines, each followed by a newline, so their per-line counts add up to the same total.
        """
        head, head_tokens = self._head
        lines = text[len(head) :].split("\n") if head and text.startswith(head) else None
        if lines is None or not all(map(_separable, lines)):
            head, head_tokens, lines = "", 0, text.split("\n")
            if not all(map(_separable, lines)):
                return len(self._encode(text))
        *body, last = lines
        tokens = head_tokens + sum(self._line(line + "\n") for line in body)
        if len(text) >= self.HEAD_TEXT:
            self._head = (text[: len(text) - len(last)], tokens)
        return tokens + self._line(last)

    def count_lines(self, lines: Sequence[str]) -> int:
        if not lines or not all(map(_separable, lines)):
            return len(self._encode("\n".join(lines)))
        *body, last = lines
        return sum(self._line(line + "\n") for line in body) + self._line(last)

    def line_tokens(self, line: str) -> tuple[int, int] | None:
        """(tokens of the line with a newline after it, tokens of the line alone), None if it is not separable."""
        return (self._line(line + "\n"), self._line(line)) if _separable(line) else None

    def _line(self, text: str) -> int:
        n = self._lines.get(text)
        if n is None:
            if len(self._lines) >= self.LINE_CACHE_SIZE:
                self._lines.clear()
            n = self._lines[text] = len(self._encode(text))
        return n

    def _count_uncached(self, m: Message) -> int:
        n = CHAT_TOKENS_PER_MESSAGE + self.count_text(m.role) + self.count_text(message_text(m))
        if m.name:
            n += CHAT_TOKENS_PER_NAME + self.count_text(m.name)
        return n


class LitellmCounter(_CachedCounter):
    """Other providers' tokenizers through `litellm.token_counter` (imported lazily)."""

    def __init__(self, model: str) -> None:
        super().__init__()
        self.name = f"litellm/{model}"
        self.model = model

    def _litellm(self) -> ModuleType:
        from memlab.litellm_offline import import_litellm

        return import_litellm()

    def count_text(self, text: str) -> int:
        return int(self._litellm().token_counter(model=self.model, text=text))

    def _count_uncached(self, m: Message) -> int:
        return int(self._litellm().token_counter(model=self.model, messages=[m.to_openai()]))


def encoding_for_model(model: str) -> str | None:
    """The tiktoken encoding of an OpenAI model name, or None for other providers."""
    import tiktoken.model

    try:
        return tiktoken.model.encoding_name_for_model(model)
    except KeyError:
        return None


@functools.cache
def get_counter(spec: str) -> _CachedCounter:
    """The shared counter for `spec`: "estimate", an encoding name, an OpenAI model, or "litellm/<model>"."""
    if spec == "estimate":
        return EstimateCounter()
    if spec in ENCODINGS:
        return TiktokenCounter(spec)
    if spec.startswith("litellm/"):
        return LitellmCounter(spec.removeprefix("litellm/"))
    encoding = encoding_for_model(spec)
    if encoding is not None:
        return TiktokenCounter(encoding)
    if _litellm_knows(spec):
        return LitellmCounter(spec)
    raise MemlabError(
        f"tokenizer={spec!r} is unknown; expected estimate, a tiktoken encoding ({', '.join(ENCODINGS)}), "
        "an OpenAI model name (e.g. gpt-4o-mini), a model in litellm's price table (e.g. claude-sonnet-4-5) "
        "or litellm/<model>"
    )


def _litellm_knows(model: str) -> bool:
    """Whether litellm has `model` in its bundled table (else its token_counter would silently fall back)."""
    from memlab.litellm_offline import import_litellm

    litellm = import_litellm()
    if model in litellm.model_cost:
        return True
    try:
        litellm.get_llm_provider(model)  # "provider/model": a provider it can route to
    except Exception:  # litellm raises its own BadRequestError for a name it cannot place
        return False
    return True


def budget_counter(name: str, tokenizer: str) -> str:
    """The counter spec of a budget counted `name`: exact is `tokenizer` (what reports count), estimate the document's.

    >>> budget_counter("exact", "o200k_base"), budget_counter("estimate", "o200k_base")
    ('o200k_base', 'estimate')
    """
    if name not in BUDGET_COUNTERS:
        raise MemlabError(
            f"counter={name!r} (context.counter or budget_counter) is not a budget counter; expected exact "
            f"(the run's tokenizer, {tokenizer}) or estimate (the design document's chars / 2.5 + 4)"
        )
    return tokenizer if name == "exact" else "estimate"


def resolve_counter(counter: str | TokenCounter) -> TokenCounter:
    """Accept a counter or its spec string (as Hydra configs give it)."""
    return get_counter(counter) if isinstance(counter, str) else counter


def _summed(counter: TokenCounter, messages: Iterable[Message]) -> int:
    """Sum of per-message counts; memlab's counters add cached counts at C speed (`count_messages`)."""
    total = getattr(counter, "count_messages", None)
    return int(total(messages)) if total is not None else sum(map(counter.count, messages))


class Tallied(Sequence[Message]):
    """A request's messages that know their token total, so a stage need not count a long history again."""

    def tokens(self, counter: TokenCounter) -> int:
        """Sum of the per-message counts of these messages."""
        raise NotImplementedError


class TalliedMessages(list[Message], Tallied):
    """A list of messages that knows its token total (`Tallied`), built by a stage that copies a request.

    `tokens(counter)` is the sum of per-message counts. `tally(counter, messages)` is given this list
    itself (so it holds no reference to it). A list changed in place (its length differs) is counted afresh.
    """

    def __init__(self, messages: Iterable[Message], tally: Callable[[TokenCounter, Sequence[Message]], int]) -> None:
        super().__init__(messages)
        self._tally = tally
        self._length = len(self)

    def tokens(self, counter: TokenCounter) -> int:
        return self._tally(counter, self) if len(self) == self._length else _summed(counter, self)


class HistoryView(Tallied, MessageView):
    """The first `len` messages of a history's own list, not copied: a call costs what it reads.

    Sound because a history (`InMemoryChatMemory`, `StoreChatMemory`) only appends to its list in
    place and puts a new list in its place on any other write, so the messages a view covers never
    change. Read-only; `+` and `list()` give lists. Beyond the design documents (issue 29: the copy
    per call made a call's cost grow with the history).

    >>> view = HistoryView([Message("user", "a"), Message("assistant", "b")], lambda c, ms: 0)
    >>> len(view), view[-1].text, [m.text for m in view[:1]], view == [m for m in view]
    (2, 'b', ['a'], True)
    """

    __slots__ = ("_length", "_messages", "_tally")

    def __init__(self, messages: list[Message], tally: Callable[[TokenCounter, Sequence[Message]], int]) -> None:
        self._messages, self._length, self._tally = messages, len(messages), tally

    def __len__(self) -> int:
        return self._length

    def _at(self, i: int) -> Message:
        if i < 0:
            i += self._length
        if not 0 <= i < self._length:
            raise IndexError("history view index out of range")
        return self._messages[i]

    def _part(self, part: slice) -> list[Message]:
        covered = range(self._length)[part]
        if covered.step > 0:
            return self._messages[covered.start : covered.stop : covered.step]
        return [self._messages[j] for j in covered]

    def __iter__(self) -> Iterator[Message]:
        return itertools.islice(self._messages, self._length)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, HistoryView | list | tuple):
            return len(other) == self._length and all(a == b for a, b in zip(self, other, strict=True))
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # like a list

    def __add__(self, other: Iterable[Message]) -> list[Message]:
        return [*self, *other]

    def __radd__(self, other: Iterable[Message]) -> list[Message]:
        return [*other, *self]

    def __repr__(self) -> str:
        return f"HistoryView({list(self)!r})"

    def tokens(self, counter: TokenCounter) -> int:
        return self._tally(counter, self)


def tallied_part(messages: Sequence[Message], start: int, stop: int) -> list[Message]:
    """``messages[start:stop]``; from `TalliedMessages`, a part that knows its total too.

    The part's total is the whole's less the messages outside it, when those are fewer than the
    part's (a summary folds all of a long request but its ends), so a long part is never summed.
    """
    part = messages[start:stop]
    if not isinstance(messages, Tallied):
        return list(part)
    whole = messages

    def tally(counter: TokenCounter, inside: Sequence[Message]) -> int:
        if len(whole) - len(inside) >= len(inside):
            return _summed(counter, inside)
        return whole.tokens(counter) - _summed(counter, whole[:start]) - _summed(counter, whole[stop:])

    return TalliedMessages(part, tally)


def request_tokens(counter: TokenCounter, messages: Sequence[Message]) -> int:
    """Sum of per-message counts of `messages`, from their tally when they have one."""
    return messages.tokens(counter) if isinstance(messages, Tallied) else _summed(counter, messages)


class RunningTally:
    """Token totals of a list that only grows, per counter: each message is counted once.

    The owner calls `reset` whenever the list changes other than by appending; a snapshot taken
    before that is then counted afresh.
    """

    def __init__(self) -> None:
        self._totals: dict[int, tuple[TokenCounter, int, int]] = {}  # id(counter) -> (counter, messages, total)
        self._generation = 0

    def reset(self) -> None:
        self._totals = {}
        self._generation += 1

    def _total(self, counter: TokenCounter, messages: Sequence[Message]) -> int:
        known = self._totals.get(id(counter))
        counted, total = (known[1], known[2]) if known and known[0] is counter and known[1] <= len(messages) else (0, 0)
        total += _summed(counter, messages[counted:])
        self._totals[id(counter)] = (counter, len(messages), total)
        return total

    def tallied(self, messages: list[Message]) -> HistoryView:
        """A view of `messages` (the owner's list as it is now, not copied) with their total from this tally.

        The owner only appends to `messages` in place, or replaces it (and resets this tally).
        """
        generation = self._generation

        def tally(counter: TokenCounter, snapshot: Sequence[Message]) -> int:
            if generation != self._generation:
                return _summed(counter, snapshot)
            return self._total(counter, snapshot)

        return HistoryView(messages, tally)
