"""`longterm=langmem`: LangMem's memory tools over a LangGraph `InMemoryStore` indexed by memlab's embedder.

The store is LangGraph's ``InMemoryStore(index={"embed": <memlab's embedder>, "dims": ...})``, one per
user, namespace ``("memories", <user id>)``. Memories are written with LangMem's
`create_manage_memory_tool` (action ``create``) and read with its `create_search_memory_tool`, both
bound to that store: every turn is saved as it is (one memory citing it), as an agent calling
``manage_memory`` on every message would; retrieval is the search tool's ranking (the store's
cosine similarity over memlab's embeddings of each memory's ``content``) for the question.

With ``extract: true`` the round's turns go instead to LangMem's `create_memory_store_manager`
(default `Memory` schema, inserts and updates, LangMem's defaults) over the same store and
namespace, with memlab's model through `langchain_chat_model` (trustcall binds its tools:
``Memory`` for a new memory, ``PatchDoc`` for an update): one extraction per round, at the moments
memlab's component saves. Each memory the manager writes or rewrites cites the turns of the
round(s) it came from; the store indexes its text (``content.content``). It needs a model that
calls tools: ``llm=litellm`` (memlab's offline extractive model does not).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, Unpack

from memlab.context.peers.base import require
from memlab.embed.base import Embedder
from memlab.errors import MemlabError
from memlab.llm import TASK_EXTRACT_MEMORIES, ChatModel
from memlab.messages import Message
from memlab.peers.adapters import embed_texts, langchain_chat_model
from memlab.peers.component import LongTermPeer, PeerHit, PeerSettings, evidence_of

ENTRY = "longterm=langmem"
CREATED = re.compile(r"created memory (\S+)")  # what LangMem's manage tool answers a create with


class LangMemMemory(LongTermPeer):
    """LangMem's manage/search memory tools over LangGraph's store (module docstring).

    Args:
        embedder: memlab's embedder, the store's ``index["embed"]``.
        llm: memlab's model, LangMem's extraction model (used only with `extract`).
        extract: LangMem's memory store manager extracts memories with the model (true) or every turn is saved as
            it is with the manage tool (false, offline).
        settings: `PeerSettings` (counter, load_max_items, probe_k, retrieve), as `LongTermPeer` takes them.
    """

    libraries = ("langmem", "langgraph")
    name = "langmem"
    user_state = ("store", "manage", "find", "manager", "_evidence")

    def __init__(
        self,
        embedder: Embedder,
        llm: ChatModel | None = None,
        extract: bool = False,
        **settings: Unpack[PeerSettings],
    ) -> None:
        super().__init__(**settings)
        if extract and llm is None:
            raise MemlabError(f"{ENTRY}: extract=true needs a model (llm=litellm)")
        self._memory = require("langgraph.store.memory", ENTRY)
        self._tools = require("langmem", ENTRY)
        self.embedder, self.llm, self.extract = embedder, llm, extract
        self.store: Any = None
        self.manager: Any = None
        self.manage: Any = None
        self.find: Any = None
        self._evidence: dict[str, tuple[str, ...]] = {}
        self._calls = 0

    def reset(self, user: str) -> None:
        index = {
            "embed": lambda texts: embed_texts(self.embedder, self.collector, texts),
            "dims": self.embedder.dim,
            # the memory's text, as the other entries embed it (LangGraph's default: the JSON)
            "fields": ["content.content" if self.extract else "content"],
        }
        self.store = self._memory.InMemoryStore(index=index)
        namespace = ("memories", user)
        self.manage = self._tools.create_manage_memory_tool(namespace, store=self.store, actions_permitted=("create",))
        self.find = self._tools.create_search_memory_tool(
            namespace, store=self.store, response_format="content_and_artifact"
        )
        if self.extract:
            assert self.llm is not None
            model = langchain_chat_model(self.llm, TASK_EXTRACT_MEMORIES, ENTRY, collector=self.collector)
            self.manager = self._tools.create_memory_store_manager(model, namespace=namespace, store=self.store)
        self._evidence = {}

    def add(self, turns: Sequence[Message]) -> int:
        if self.extract:
            return self._extract(turns)
        saved = 0
        for m in turns:
            answer = str(self.manage.invoke({"content": m.text, "action": "create"}))
            created = CREATED.search(answer)
            if created is None:
                raise MemlabError(f"{ENTRY}: LangMem's manage_memory answered {answer!r}, not 'created memory <id>'")
            self._evidence[self.memory_id(created.group(1))] = (m.id,) if m.id else ()
            saved += 1
        return saved

    def _extract(self, turns: Sequence[Message]) -> int:
        """LangMem's store manager on one round; the memories it created (an update cites this round too)."""
        round_ids = evidence_of(turns)
        messages = [{"role": m.role if m.role in ("user", "assistant") else "user", "content": m.text} for m in turns]
        created = 0
        for put in self.manager.invoke({"messages": messages}):
            i = self.memory_id(str(put["key"]))
            created += i not in self._evidence
            self._evidence[i] = tuple(dict.fromkeys((*self._evidence.get(i, ()), *round_ids)))
        return created

    def search(self, query: str, k: int) -> list[PeerHit]:
        self._calls += 1
        call = {"type": "tool_call", "id": f"search-{self._calls}", "name": self.find.name}
        reply = self.find.invoke({**call, "args": {"query": query, "limit": k}})
        ids = [self.memory_id(item.key) for item in reply.artifact]
        return [
            PeerHit(_text(item.value["content"]), self._evidence.get(i, ()), float(item.score or 0.0), i)
            for item, i in zip(reply.artifact, ids, strict=True)
        ]


def _text(content: Any) -> str:
    """A stored memory's text: the manage tool's string, or the store manager's `Memory` (``{"content": ...}``)."""
    return str(content["content"]) if isinstance(content, dict) else str(content)
