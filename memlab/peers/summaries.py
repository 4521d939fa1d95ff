"""The libraries' stored-history summarizers on the Memory layer: memory strategies and AgentMemory compressors.

Each class is both a `MemoryStrategy` (``memory=<entry>``: `apply` rewrites a session's stored history at
session end, as memlab's SUMMARIZE does) and a `MemoryCompressor` (``agent_memory=<entry>``: `compress`
runs after every write, as the hybrid compressor does), over the library's own code:

- `LlamaIndexSummaryMemory`: llama-index-core's `ChatSummaryMemoryBuffer(token_limit=...)`. The history (the
  previous summary first, as the buffer stores it) is `set` and `get` is asked: the newest messages whose
  text fits `token_limit` stay verbatim (never starting on an assistant or tool message), the rest and the
  previous summary are summarized by memlab's model into one system message, which is what is stored;
- `LangMemSummaryMemory`: LangMem's `summarize_messages(messages, running_summary=..., max_tokens=...,
  max_tokens_before_summary=..., max_summary_tokens=...)`, the function its `SummarizationNode` calls.
  Once the messages not yet summarized reach `max_tokens_before_summary` tokens (and the rest fit
  ``max_tokens - max_summary_tokens``), the oldest ones are folded into the running summary by memlab's
  model (through a LangChain chat-model bridge, `max_summary_tokens` its answer limit as LangMem's docs
  advise); the stored history becomes LangMem's own output, ``Summary of the conversation so far: ...``
  as a system message, then the messages kept.

The libraries count with memlab's counter (the run's tokenizer, over each message's text). Each summary
is one SUMMARY event (layer ``memory`` or ``compressor``) whose `source_ids` are the messages folded in,
so `summary.*`, `context.evidence_fed_to_summary` and `context.evidence_in_summary` read it as they read
memlab's. Departures, named: a previous summary is recognised as one this entry wrote (by its text, in
this process); neither library checks that a summary is not longer than its source (memlab's summarizers
fall back when it is): the summary is stored whatever the model wrote, and `accepted` is true.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from memlab.context.peers.base import require
from memlab.context.peers.langchain import to_langchain
from memlab.context.peers.llamaindex import KEY, to_llamaindex
from memlab.errors import MemlabError
from memlab.llm import TASK_MEMORY_SUMMARY, ChatModel
from memlab.memory.agent import MemorySnapshot
from memlab.messages import Message, MessageLike, as_messages, items_to_messages
from memlab.peers.adapters import langchain_chat_model, llamaindex_llm
from memlab.peers.component import Collector
from memlab.summary import DEFAULT_SUMMARY_TOKENS, LAYER_COMPRESSOR, LAYER_MEMORY
from memlab.tokens import TokenCounter, resolve_counter
from memlab.trace import SummaryEvent, emit, timed

# Ours: the token budget of the history both libraries keep (summary included for LangMem), the 1,000 tokens
# experiment=peers gives the context peers on LoCoMo; the libraries' own (llama-index 2,000 from its model's
# context, LangMem none) do not apply to a stored history.
DEFAULT_MAX_TOKENS = 1000
LANGMEM_SUMMARY_TOKENS = 256  # LangMem's max_summary_tokens default
LANGMEM_PREFIX = "Summary of the conversation so far: "  # LangMem's final prompt puts the summary after this
PREVIOUS = "previous-summary"  # the key of the previous summary given to llama-index's buffer


class HistorySummarizer:
    """What both share: the previous summary, the rewrite of a history or snapshot, the SUMMARY event.

    Args:
        llm: memlab's model, the library's summarizer.
        counter: memlab's counter, the library's token counter and the events'.
    """

    name = "peer_summary"
    libraries: tuple[str, ...] = ()  # recorded with their versions in the run's manifest
    prefix = ""  # put before the summary in the stored system message

    def __init__(self, llm: ChatModel | None, counter: str | TokenCounter) -> None:
        if llm is None:
            raise MemlabError(f"{self.name} needs a chat model: set llm (e.g. llm=extractive)")
        self.llm = llm
        self.counter = resolve_counter(counter)
        self._written: set[str] = set()  # the stored summary messages this entry wrote

    def fold(self, messages: list[Message], summary: str | None) -> tuple[str, int] | None:
        """The library on `messages` after `summary`: (the new summary, how many newest messages it keeps)."""
        raise NotImplementedError

    def apply(self, messages: Sequence[MessageLike]) -> list[Message]:
        """The stored history rewritten: the library's summary message, then the messages it keeps.

        Args:
            messages: the stored history, oldest first (a summary this entry wrote first, if any).
        """
        ms = as_messages(messages)
        previous = (
            ms[0].text[len(self.prefix) :] if ms and ms[0].role == "system" and ms[0].text in self._written else None
        )
        body = ms[1:] if previous is not None else ms
        folded = self._summarize(body, previous, LAYER_MEMORY)
        if folded is None:
            return ms
        summary, kept = folded
        stored = Message("system", self.prefix + summary)
        self._written.add(stored.text)
        return [stored, *body[len(body) - kept :]]

    def compress(self, snapshot: MemorySnapshot) -> MemorySnapshot:
        """The snapshot with the library's summary and the items of the messages it keeps.

        Args:
            snapshot: the AgentMemory's items and summary.
        """
        items = list(snapshot.items)
        folded = self._summarize(items_to_messages(items), snapshot.summary, LAYER_COMPRESSOR)
        if folded is None:
            return snapshot
        summary, kept = folded
        total = len(items_to_messages(items))
        cut = next(i for i in range(len(items) + 1) if total - len(items_to_messages(items[:i])) <= kept)
        return MemorySnapshot.of(items[cut:], summary)

    def _summarize(self, body: list[Message], previous: str | None, layer: str) -> tuple[str, int] | None:
        if not body:
            return None
        with timed() as t:
            folded = self.fold(body, previous)
        if folded is None:
            return None
        summary, kept = folded
        gone = body[: len(body) - kept]
        SummaryEvent(
            layer=layer,
            strategy=self.name,
            source_ids=tuple(m.id for m in gone if m.id),
            source_messages=len(gone),
            source_tokens=sum(self.counter.count(m) for m in gone),
            summary_tokens=self.counter.count_text(summary),
            counter=self.counter.name,
            accepted=True,  # the libraries store whatever the model wrote
            text=self.prefix + summary,
            latency_us=t["us"],
        ).emit()
        return folded


class LlamaIndexSummaryMemory(HistorySummarizer):
    """llama-index's `ChatSummaryMemoryBuffer` as a memory strategy and compressor (module docstring).

    Args:
        llm: memlab's model, the buffer's `llm`.
        counter: memlab's counter, the buffer's `tokenizer_fn`.
        max_tokens: the buffer's `token_limit`.
        summary_tokens: the longest summary asked of the model.
    """

    name = "llamaindex_summary"
    libraries = ("llama-index-core",)

    def __init__(
        self,
        llm: ChatModel | None,
        counter: str | TokenCounter = "cl100k_base",
        max_tokens: int = DEFAULT_MAX_TOKENS,
        summary_tokens: int | None = DEFAULT_SUMMARY_TOKENS,
    ) -> None:
        super().__init__(llm, counter)
        self._memory = require("llama_index.core.memory", self.name)
        self._types = require("llama_index.core.base.llms.types", self.name)
        self.max_tokens = max_tokens
        self.collector = Collector()
        self._llm = llamaindex_llm(self.llm, self.collector, TASK_MEMORY_SUMMARY, self.name, summary_tokens)

    def fold(self, messages: list[Message], summary: str | None) -> tuple[str, int] | None:
        chat = [to_llamaindex(m, str(i)) for i, m in enumerate(messages)]
        if summary is not None:  # the buffer keeps its summary as the first message, a system one
            chat.insert(0, to_llamaindex(Message("system", summary), PREVIOUS))
        buffer = self._memory.ChatSummaryMemoryBuffer.from_defaults(
            llm=self._llm, token_limit=self.max_tokens, tokenizer_fn=lambda text: range(self.counter.count_text(text))
        )
        buffer.set(chat)
        try:
            out = buffer.get()
        finally:
            for e in self.collector.drain():
                emit(e.kind, **e.data)
        # The buffer returns copies: a message memlab gave carries its key, the summary the buffer wrote none.
        if not out or KEY in out[0].additional_kwargs:
            return None  # everything fits, or the previous summary is passed on as it is (no model call)
        return str(out[0].content or ""), len(out) - 1


class LangMemSummaryMemory(HistorySummarizer):
    """LangMem's `summarize_messages` as a memory strategy and compressor (module docstring).

    Args:
        llm: memlab's model, LangMem's `model` (through a LangChain chat-model bridge).
        counter: memlab's counter, LangMem's `token_counter`.
        max_tokens: LangMem's max_tokens.
        max_tokens_before_summary: LangMem's max_tokens_before_summary (None: max_tokens).
        max_summary_tokens: LangMem's max_summary_tokens, also the model's answer limit.
    """

    name = "langmem_summary"
    libraries = ("langmem", "langchain-core")
    prefix = LANGMEM_PREFIX

    def __init__(
        self,
        llm: ChatModel | None,
        counter: str | TokenCounter = "cl100k_base",
        max_tokens: int = DEFAULT_MAX_TOKENS,
        max_tokens_before_summary: int | None = None,
        max_summary_tokens: int = LANGMEM_SUMMARY_TOKENS,
    ) -> None:
        super().__init__(llm, counter)
        if max_summary_tokens >= max_tokens:
            raise MemlabError(f"{self.name}: max_summary_tokens must be less than max_tokens (LangMem raises)")
        self._langmem = require("langmem.short_term", self.name)
        self.max_tokens, self.before, self.summary_tokens = max_tokens, max_tokens_before_summary, max_summary_tokens
        self._model = langchain_chat_model(self.llm, TASK_MEMORY_SUMMARY, self.name, max_summary_tokens)

    def _count(self, messages: Sequence[Any]) -> int:
        return sum(
            self.counter.count_text(m.content if isinstance(m.content, str) else str(m.content)) for m in messages
        )

    def fold(self, messages: list[Message], summary: str | None) -> tuple[str, int] | None:
        chat = [to_langchain(m, str(i)) for i, m in enumerate(messages)]
        running = self._langmem.RunningSummary(summary, set(), None) if summary is not None else None
        result = self._langmem.summarize_messages(
            chat,
            running_summary=running,
            model=self._model,
            max_tokens=self.max_tokens,
            max_tokens_before_summary=self.before,
            max_summary_tokens=self.summary_tokens,
            token_counter=self._count,
        )
        made = result.running_summary
        if made is None or made is running:  # nothing new summarized
            return None
        last = next(i for i, m in enumerate(chat) if m.id == made.last_summarized_message_id)
        return str(made.summary), len(chat) - last - 1
