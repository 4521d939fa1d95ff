"""`longterm=langmem`: LangMem's memory tools over a LangGraph `InMemoryStore` indexed by memlab's embedder.

The store is LangGraph's ``InMemoryStore(index={"embed": <memlab's embedder>, "dims": ...})``, one per
user (dialogue), namespace ``("memories", <dialogue id>)``. Memories are written with LangMem's
`create_manage_memory_tool` (action ``create``) and read with its `create_search_memory_tool`, both
bound to that store: every turn is saved as it is (one memory citing it), as an agent calling
``manage_memory`` on every message would; retrieval is the search tool's ranking (the store's
cosine similarity over memlab's embeddings of each memory's ``content``) for the question.

Not here: LangMem's `create_memory_store_manager`, whose extraction needs a chat model with tool
calling through trustcall (docs/peers.md says why it is not measured).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, Unpack

from memlab.context.peers.base import require
from memlab.embed.base import Embedder
from memlab.errors import MemlabError
from memlab.messages import Message
from memlab.peers.adapters import embed_texts
from memlab.peers.component import LongTermPeer, PeerHit, PeerSettings

ENTRY = "longterm=langmem"
CREATED = re.compile(r"created memory (\S+)")  # what LangMem's manage tool answers a create with


class LangMemMemory(LongTermPeer):
    """LangMem's manage/search memory tools over LangGraph's store (module docstring).

    Args:
        embedder: memlab's embedder, the store's ``index["embed"]``.
        settings: `PeerSettings` (counter, load_max_items, probe_k, retrieve), as `LongTermPeer` takes them.
    """

    libraries = ("langmem", "langgraph")
    name = "langmem"

    def __init__(
        self,
        embedder: Embedder,
        **settings: Unpack[PeerSettings],
    ) -> None:
        super().__init__(**settings)
        self._memory = require("langgraph.store.memory", ENTRY)
        self._tools = require("langmem", ENTRY)
        self.embedder = embedder
        self.store: Any = None
        self.manage: Any = None
        self.find: Any = None
        self._evidence: dict[str, tuple[str, ...]] = {}
        self._calls = 0

    def reset(self, user: str) -> None:
        index = {
            "embed": lambda texts: embed_texts(self.embedder, self.collector, texts),
            "dims": self.embedder.dim,
            "fields": ["content"],  # the memory's text, as the other entries embed it (LangGraph's default: the JSON)
        }
        self.store = self._memory.InMemoryStore(index=index)
        namespace = ("memories", user)
        self.manage = self._tools.create_manage_memory_tool(namespace, store=self.store, actions_permitted=("create",))
        self.find = self._tools.create_search_memory_tool(
            namespace, store=self.store, response_format="content_and_artifact"
        )
        self._evidence = {}

    def add(self, turns: Sequence[Message]) -> int:
        saved = 0
        for m in turns:
            answer = str(self.manage.invoke({"content": m.text, "action": "create"}))
            created = CREATED.search(answer)
            if created is None:
                raise MemlabError(f"{ENTRY}: LangMem's manage_memory answered {answer!r}, not 'created memory <id>'")
            self._evidence[self.memory_id(created.group(1))] = (m.id,) if m.id else ()
            saved += 1
        return saved

    def search(self, query: str, k: int) -> list[PeerHit]:
        self._calls += 1
        call = {"type": "tool_call", "id": f"search-{self._calls}", "name": self.find.name}
        reply = self.find.invoke({**call, "args": {"query": query, "limit": k}})
        ids = [self.memory_id(item.key) for item in reply.artifact]
        return [
            PeerHit(str(item.value["content"]), self._evidence.get(i, ()), float(item.score or 0.0), i)
            for item, i in zip(reply.artifact, ids, strict=True)
        ]
