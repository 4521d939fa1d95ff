"""memlab's embedder and model in the shapes the libraries take, every call reported through a `Collector`.

- `embed_texts`: memlab's `Embedder` as plain lists of floats (LangGraph's store ``index={"embed": ...}``,
  mem0's embedder);
- `llamaindex_embedding`: a llama-index `BaseEmbedding`;
- `llamaindex_llm`: a llama-index LLM whose `chat` is one `ChatModel.complete` of the given task;
- `langchain_chat_model`: a LangChain `BaseChatModel` whose `invoke` is one `ChatModel.complete` of the given
  task, tools bound through `bind_tools` (LangMem's summarization and extraction);
- `chat_messages`: an OpenAI-format message list as memlab `Message`s, for mem0's and LangMem's requests.

Each is built lazily, so importing this module needs none of the libraries.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from memlab.context.peers.base import require
from memlab.embed.base import Embedder
from memlab.errors import MemlabError
from memlab.llm import ChatModel
from memlab.messages import Message, ToolCall
from memlab.peers.component import Collector


def embed_texts(embedder: Embedder, collector: Collector, texts: Sequence[str]) -> list[list[float]]:
    """`texts` embedded by memlab's embedder, as lists (the call reported to `collector`)."""
    vectors = collector.call(lambda: embedder.embed(list(texts)))
    return [[float(x) for x in row] for row in vectors]


def chat_messages(messages: Sequence[Any]) -> list[Message]:
    """OpenAI-format dicts (or objects with `role` and `content`) as memlab messages; list contents joined."""
    out = []
    for m in messages:
        role, content = (m["role"], m.get("content")) if isinstance(m, dict) else (str(m.role), m.content)
        if isinstance(content, list):
            content = " ".join(str(p.get("text", "")) if isinstance(p, dict) else str(p) for p in content)
        out.append(Message(str(getattr(role, "value", role)), str(content or "")))
    return out


def llamaindex_embedding(embedder: Embedder, collector: Collector, entry: str) -> Any:
    """A llama-index `BaseEmbedding` computing with memlab's embedder."""
    base = require("llama_index.core.base.embeddings.base", entry)

    class MemlabEmbedding(base.BaseEmbedding):  # type: ignore[name-defined]
        """llama-index's embedding interface over memlab's `Embedder` (queries and texts alike)."""

        def _get_query_embedding(self, query: str) -> list[float]:
            return embed_texts(embedder, collector, [query])[0]

        def _get_text_embedding(self, text: str) -> list[float]:
            return embed_texts(embedder, collector, [text])[0]

        def _get_text_embeddings(self, texts: list[str]) -> list[list[float]]:
            return embed_texts(embedder, collector, texts)

        async def _aget_query_embedding(self, query: str) -> list[float]:
            return self._get_query_embedding(query)

        async def _aget_text_embedding(self, text: str) -> list[float]:
            return self._get_text_embedding(text)

    return MemlabEmbedding(model_name=embedder.name, embed_batch_size=256)


def llamaindex_llm(llm: ChatModel, collector: Collector, task: str, entry: str, max_tokens: int | None = None) -> Any:
    """A llama-index LLM whose `chat` is memlab's `llm.complete(..., task=task)`."""
    custom = require("llama_index.core.llms.custom", entry)
    types = require("llama_index.core.base.llms.types", entry)

    class MemlabLLM(custom.CustomLLM):  # type: ignore[name-defined]
        """llama-index's LLM interface over memlab's `ChatModel` (chat and complete; no streaming)."""

        @property
        def metadata(self) -> Any:
            return types.LLMMetadata(num_output=max_tokens or -1, is_chat_model=True, model_name=llm.name)

        def chat(self, messages: Sequence[Any], **kwargs: Any) -> Any:
            request = [Message(str(m.role.value), m.content or "") for m in messages]
            text = collector.call(lambda: llm.complete(request, task=task, max_tokens=max_tokens)).text
            return types.ChatResponse(message=types.ChatMessage(role=types.MessageRole.ASSISTANT, content=text))

        async def achat(self, messages: Sequence[Any], **kwargs: Any) -> Any:
            return self.chat(messages, **kwargs)

        def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> Any:
            return types.CompletionResponse(text=self.chat([types.ChatMessage(content=prompt)]).message.content)

        async def acomplete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> Any:
            return self.complete(prompt, formatted, **kwargs)

        def stream_complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> Any:
            raise MemlabError("memlab's bridge to llama-index does not stream")

    return MemlabLLM()


def langchain_chat_model(
    llm: ChatModel, task: str, entry: str, max_tokens: int | None = None, collector: Collector | None = None
) -> Any:
    """A LangChain chat model whose `invoke` is memlab's `llm.complete(..., task=task)` (no streaming).

    `bind_tools` (trustcall's, LangMem's extraction) sends the tools in OpenAI's schema through
    `llm.complete(..., tools=..., tool_choice=...)` when the model supports tools (``supports_tools``:
    litellm's) and returns the model's tool calls on the `AIMessage`; tool-call and tool-result
    messages are passed on as OpenAI's.

    Args:
        llm: memlab's model; it reports each call as usual (on the calling thread: LangChain's sync path).
        task: the memlab task the calls are made as.
        entry: the config entry, named if langchain-core is missing.
        max_tokens: the longest answer asked for (None: the model's own limit).
        collector: gathers the calls' events when the library may call from its own threads (None: reported
            where they are made).
    """
    chat_models = require("langchain_core.language_models.chat_models", entry)
    outputs = require("langchain_core.outputs", entry)
    lc = require("langchain_core.messages", entry)
    function_calling = require("langchain_core.utils.function_calling", entry)

    def ask(request: list[Message], params: dict[str, Any]) -> Any:
        def call() -> Any:
            return llm.complete(request, task=task, max_tokens=max_tokens, **params)

        return collector.call(call) if collector is not None else call()

    class MemlabChatModel(chat_models.BaseChatModel):  # type: ignore[name-defined]
        """LangChain's chat-model interface over memlab's `ChatModel`."""

        @property
        def _llm_type(self) -> str:
            return f"memlab-{llm.name}"

        def bind_tools(self, tools: Sequence[Any], *, tool_choice: Any = None, **kwargs: Any) -> Any:
            if not getattr(llm, "supports_tools", False):
                raise MemlabError(f"{entry}: the model {llm.name!r} does not call tools (llm=litellm does)")
            params: dict[str, Any] = {"tools": [function_calling.convert_to_openai_tool(t) for t in tools]}
            if tool_choice is not None:
                params["tool_choice"] = openai_tool_choice(tool_choice)
            return self.bind(**params, **kwargs)

        def _generate(self, messages: list[Any], stop: Any = None, run_manager: Any = None, **kwargs: Any) -> Any:
            params: dict[str, Any] = {k: kwargs[k] for k in ("tools", "tool_choice") if k in kwargs}
            completion = ask([_from_langchain(m) for m in messages], params)
            calls = [
                {"name": c.name, "args": json.loads(c.arguments or "{}"), "id": c.id} for c in completion.tool_calls
            ]
            message = lc.AIMessage(content=completion.text, tool_calls=calls)
            return outputs.ChatResult(generations=[outputs.ChatGeneration(message=message)])

    return MemlabChatModel()


def openai_tool_choice(choice: Any) -> Any:
    """LangChain's `tool_choice` as OpenAI's: "any" is "required", a tool's name is that function.

    Args:
        choice: "auto", "none", "any", "required", a tool's name, or OpenAI's dict.

    >>> openai_tool_choice("any"), openai_tool_choice("auto")
    ('required', 'auto')
    >>> openai_tool_choice("PatchDoc")
    {'type': 'function', 'function': {'name': 'PatchDoc'}}
    """
    if choice == "any" or choice is True:
        return "required"
    if isinstance(choice, str) and choice not in ("auto", "none", "required"):
        return {"type": "function", "function": {"name": choice}}
    return choice


def _from_langchain(m: Any) -> Message:
    """A LangChain message as memlab's, its tool calls (an AI message's) and tool-call id (a tool result's) kept."""
    (base,) = chat_messages([{"role": _ROLES.get(m.type, m.type), "content": m.content}])
    calls = tuple(
        ToolCall(id=str(c["id"]), name=c["name"], arguments=json.dumps(c["args"])) for c in getattr(m, "tool_calls", ())
    )
    tool_call_id = getattr(m, "tool_call_id", None) if m.type == "tool" else None
    return Message(
        base.role, base.content if base.content or not calls else None, tool_calls=calls, tool_call_id=tool_call_id
    )


_ROLES = {"human": "user", "ai": "assistant"}  # LangChain's message types as chat roles
