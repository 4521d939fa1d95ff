"""`llamaindex_buffer` and `llamaindex_summary`: llama-index-core's chat memories as context strategies.

`ChatMemoryBuffer` keeps the newest messages whose joined text fits `token_limit` (never
starting on an assistant or tool message); `ChatSummaryMemoryBuffer` keeps the newest
messages that fit and has a model summarize the rest into one system message, folding the
previous summary into the next. Both count text with `tokenizer_fn`, here memlab's counter
(`count_text`: no per-message framing, as llama-index counts). Leading system messages are
sent in front, outside the memory, and counted as `initial_token_count`, as llama-index's chat
engines do with their prefix messages (`keep_system=False` puts them in the memory instead).

The summary buffer's model is memlab's `ChatModel` (`${llm}`: the offline extractive model or
litellm) behind `ChatModelLLM`, a llama-index LLM that forwards its `chat` as a context-summary
task. Its memory persists between calls the way an agent's would: each call restores the state
reached at the longest earlier request that the new one extends, adds what is new and calls
`get()`. Each new summary is reported as a SUMMARY event whose `source_ids` are every message
folded into it so far.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from memlab.context.base import check_count, leading_system
from memlab.context.peers.base import Keys, require
from memlab.context.sliding_window import DEFAULT_MAX_TOKENS
from memlab.errors import MemlabError
from memlab.llm import TASK_CONTEXT_SUMMARY, ChatModel
from memlab.messages import Message, MessageLike, ToolCall, as_messages
from memlab.summary import DEFAULT_SUMMARY_TOKENS, LAYER_CONTEXT
from memlab.tokens import TokenCounter, resolve_counter
from memlab.trace import SummaryEvent, timed

KEY = "memlab_key"  # where a message's key rides in llama-index's `additional_kwargs`


def to_llamaindex(m: Message, key: str) -> Any:
    """A memlab message as llama-index's `ChatMessage` (OpenAI tool fields in `additional_kwargs`)."""
    types = require("llama_index.core.base.llms.types", "llamaindex_*")
    extra: dict[str, Any] = {KEY: key}
    if m.tool_calls:
        extra["tool_calls"] = [c.to_openai() for c in m.tool_calls]
    if m.tool_call_id is not None:
        extra["tool_call_id"] = m.tool_call_id
    return types.ChatMessage(role=types.MessageRole(m.role), content=m.content, additional_kwargs=extra)


def from_llamaindex(obj: Any) -> Message:
    """A llama-index message memlab did not give (a summary): role, text and tool fields."""
    extra = obj.additional_kwargs
    calls = tuple(ToolCall.from_openai(c) for c in extra.get("tool_calls") or ())
    return Message(str(obj.role.value), obj.content, tool_calls=calls, tool_call_id=extra.get("tool_call_id"))


class _Memory:
    """What both share: keys, the system prefix, the tokenizer and the way back."""

    name: str
    libraries = ("llama-index-core",)  # recorded with their versions in the run's manifest

    def __init__(self, max_tokens: int, counter: str | TokenCounter, keep_system: bool) -> None:
        self._memory_module = require("llama_index.core.memory", self.name)
        self.max_tokens = check_count("max_tokens", max_tokens)
        if self.max_tokens == 0:
            raise MemlabError(f"context strategy {self.name}: max_tokens=0; llama-index requires a limit >= 1")
        self.counter = resolve_counter(counter)
        self.keep_system = keep_system
        self._keys: Keys[Any] = Keys(to_llamaindex)

    def _tokenize(self, text: str) -> range:
        """llama-index's `tokenizer_fn`: it only takes the length of what this returns."""
        return range(self.counter.count_text(text))

    def _split(self, ms: list[Message]) -> tuple[list[Message], list[Message], int]:
        """(prefix sent as is, the rest for the memory, the prefix's tokens); fails where llama-index would."""
        head = leading_system(ms) if self.keep_system else 0
        initial = len(self._tokenize(" ".join(m.text for m in ms[:head]))) if head else 0
        if initial > self.max_tokens:
            raise MemlabError(
                f"context strategy {self.name}: the system messages take {initial} tokens, more than "
                f"max_tokens={self.max_tokens} (llama-index raises here); raise context.strategy.max_tokens"
            )
        return ms[:head], ms[head:], initial

    def _back(self, out: Sequence[Any]) -> list[Message]:
        return [self._keys.message(o.additional_kwargs.get(KEY)) or from_llamaindex(o) for o in out]


class LlamaIndexBuffer(_Memory):
    """`ChatMemoryBuffer(token_limit=max_tokens)`."""

    name = "llamaindex_buffer"

    def __init__(
        self, max_tokens: int = DEFAULT_MAX_TOKENS, counter: str | TokenCounter = "estimate", keep_system: bool = True
    ) -> None:
        super().__init__(max_tokens, counter, keep_system)
        self._memory = self._memory_module.ChatMemoryBuffer.from_defaults(
            token_limit=self.max_tokens, tokenizer_fn=self._tokenize
        )

    def apply(self, messages: Sequence[MessageLike]) -> list[Message]:
        prefix, body, initial = self._split(as_messages(messages))
        self._memory.set([self._keys.peer(m) for m in body])
        return prefix + self._back(self._memory.get(initial_token_count=initial))

    def __repr__(self) -> str:
        return f"LlamaIndexBuffer(max_tokens={self.max_tokens}, counter={self.counter.name!r})"


def chat_model_llm(llm: ChatModel, summary_tokens: int | None) -> Any:
    """memlab's `ChatModel` as a llama-index LLM whose `chat` is a context-summary call."""
    custom = require("llama_index.core.llms", "llamaindex_summary")
    types = require("llama_index.core.base.llms.types", "llamaindex_summary")

    class ChatModelLLM(custom.CustomLLM):  # type: ignore[name-defined]
        """Forwards llama-index's summary request to memlab's model, which reports the call as usual."""

        @property
        def metadata(self) -> Any:
            return types.LLMMetadata(num_output=summary_tokens or -1, is_chat_model=True, model_name=llm.name)

        def chat(self, messages: Sequence[Any], **kwargs: Any) -> Any:
            request = [Message(str(m.role.value), m.content) for m in messages]
            text = llm.complete(request, task=TASK_CONTEXT_SUMMARY, max_tokens=summary_tokens).text
            return types.ChatResponse(message=types.ChatMessage(role=types.MessageRole.ASSISTANT, content=text))

        def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> Any:
            return types.CompletionResponse(text=self.chat([types.ChatMessage(content=prompt)]).message.content)

        def stream_complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> Any:
            raise MemlabError("memlab's bridge to llama-index does not stream")

    return ChatModelLLM()


@dataclass(frozen=True)
class _State:
    """The memory after one call: the messages fed so far, what the store held, the ids in its summary."""

    fed: list[Message]
    store: list[Any]
    folded: tuple[str, ...]


class LlamaIndexSummary(_Memory):
    """`ChatSummaryMemoryBuffer(token_limit=max_tokens, llm=<memlab's model>)`."""

    name = "llamaindex_summary"

    def __init__(
        self,
        llm: ChatModel | None,
        max_tokens: int = DEFAULT_MAX_TOKENS,
        counter: str | TokenCounter = "estimate",
        keep_system: bool = True,
        summary_tokens: int | None = DEFAULT_SUMMARY_TOKENS,
    ) -> None:
        super().__init__(max_tokens, counter, keep_system)
        self.llm = llm
        bridge = chat_model_llm(llm, summary_tokens) if llm is not None else None
        self._memory = self._memory_module.ChatSummaryMemoryBuffer.from_defaults(
            llm=bridge, token_limit=self.max_tokens, tokenizer_fn=self._tokenize, count_initial_tokens=True
        )
        self._states: list[_State] = []

    def _restore(self, body: list[Message]) -> tuple[list[Message], tuple[str, ...]]:
        """Put the memory back where the longest earlier request that `body` extends left it; what is new."""
        while self._states and self._states[-1].fed != body[: len(self._states[-1].fed)]:
            self._states.pop()
        if not self._states:
            self._memory.reset()
            return body, ()
        state = self._states[-1]
        self._memory.set(list(state.store))
        return body[len(state.fed) :], state.folded

    def apply(self, messages: Sequence[MessageLike]) -> list[Message]:
        prefix, body, initial = self._split(as_messages(messages))
        new, folded = self._restore(body)
        for m in new:
            self._memory.put(self._keys.peer(m))
        before = list(self._memory.get_all())
        with timed() as t:
            out = self._memory.get(initial_token_count=initial)
        kept = {id(o) for o in out}
        if out and id(out[0]) not in {id(b) for b in before}:  # a new summary
            gone = [b for b in before if id(b) not in kept]
            sources = (self._keys.message(b.additional_kwargs.get(KEY)) for b in gone)
            folded += tuple(src.id for src in sources if src is not None and src.id is not None)
            self._report(gone, out[0], folded, t["us"])
        self._states.append(_State(fed=body, store=list(out), folded=folded))
        return prefix + self._back(out)

    def _report(self, gone: list[Any], summary: Any, folded: tuple[str, ...], latency_us: int) -> None:
        made = from_llamaindex(summary)
        SummaryEvent(
            layer=LAYER_CONTEXT,
            strategy=self.name,
            source_ids=folded,
            source_messages=len(gone),
            source_tokens=sum(self.counter.count(m) for m in self._back(gone)),
            summary_tokens=self.counter.count(made),
            counter=self.counter.name,
            accepted=True,  # llama-index sends whatever the model wrote
            text=made.text,
            latency_us=latency_us,
        ).emit()

    def __repr__(self) -> str:
        model = getattr(self.llm, "name", None)
        return f"LlamaIndexSummary(llm={model!r}, max_tokens={self.max_tokens}, counter={self.counter.name!r})"
