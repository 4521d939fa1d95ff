"""`longterm=llamaindex_memory`: llama-index-core's `Memory` with a `VectorMemoryBlock` (and fact extraction).

Each user message and reply is `put` into a `Memory` (its short-term FIFO, in llama-index's SQL
chat store, in memory). When the FIFO holds more than ``token_limit * chat_history_token_ratio``
tokens, `Memory` flushes its oldest complete turns, about `token_flush_size` tokens at a time, to
its memory blocks: `VectorMemoryBlock` stores each flushed batch as one node (the messages as
``<message role='...'>`` lines), embedded by memlab's embedder; with `facts: true` a
`FactExtractionMemoryBlock` has memlab's model (`${llm}`) extract facts from the same batches.
Retrieval is the vector block's own `aget` on the question (its ``similarity_top_k`` set to the
probe's depth). A node cites the turns of the batch it was made from; the fact block's facts are
not retrievable (llama-index renders them all into the prompt), so they are reported, as text,
only in the injected block's tokens. Token counts are memlab's counter (llama-index's `tokenizer_fn`).

Departures from memlab's component, named: messages still in the FIFO are not in the blocks, so
the turns of the last ``token_limit * chat_history_token_ratio`` tokens of a conversation cannot be
retrieved (llama-index serves them as chat history, the context layer's job); a node cites every
turn of its batch, so a node of 15 turns earns recall for all 15 (recall@K counts memories, not turns).
"""

from __future__ import annotations

import asyncio
import os
import weakref
from collections.abc import Sequence
from typing import Any, Unpack

from memlab.context.peers.base import require
from memlab.embed.base import Embedder
from memlab.errors import MemlabError
from memlab.llm import TASK_MEMORY_SUMMARY, ChatModel
from memlab.messages import Message
from memlab.peers.adapters import llamaindex_embedding, llamaindex_llm
from memlab.peers.component import LongTermPeer, PeerHit, PeerSettings

ENTRY = "longterm=llamaindex_memory"
EVIDENCE = "memlab_evidence"  # the node metadata key holding the turn ids a node was made from
# Ours: llama-index's defaults (30,000 tokens, flush 3,000) keep a whole LoCoMo conversation in the FIFO, so
# nothing would reach the blocks; these flush once 700 tokens are in the FIFO, ~100 tokens (3-4 turns) per node.
DEFAULT_TOKEN_LIMIT = 1000
DEFAULT_FLUSH_SIZE = 100
DEFAULT_HISTORY_RATIO = 0.7  # llama-index's default


def text_vector_store(entry: str) -> Any:
    """llama-index's `SimpleVectorStore` that also keeps each node (the vector block needs text) with ordered ids.

    It labels each node it is given with the turns being flushed (`labels`, a FIFO of the turns put
    into `Memory`) and numbers node ids in order, so equal scores rank the same way on every run.
    """
    simple = require("llama_index.core.vector_stores.simple", entry)
    types = require("llama_index.core.vector_stores.types", entry)
    pydantic = require("llama_index.core.bridge.pydantic", entry)

    class TextVectorStore(simple.SimpleVectorStore):  # type: ignore[name-defined]
        """`SimpleVectorStore` with `stores_text`: queries return the nodes themselves."""

        stores_text: bool = True
        _nodes: dict[str, Any] = pydantic.PrivateAttr(default_factory=dict)
        _labels: list[tuple[str, str]] = pydantic.PrivateAttr(default_factory=list)
        _last: list[tuple[Any, float]] = pydantic.PrivateAttr(default_factory=list)

        @property
        def nodes(self) -> int:
            """Nodes stored so far."""
            return len(self._nodes)

        def last(self) -> list[tuple[Any, float]]:
            """The (node, similarity) pairs of the latest query, best first."""
            return list(self._last)

        def expect(self, turns: Sequence[Message]) -> None:
            """The turns put into `Memory`, in order: a flushed batch is the oldest of them."""
            self._labels.extend((m.text, m.id or "") for m in turns)

        def add(self, nodes: Sequence[Any], **kwargs: Any) -> list[str]:
            for node in nodes:
                lines = node.text.count("<message role=")
                batch, self._labels = self._labels[:lines], self._labels[lines:]
                node.metadata[EVIDENCE] = [turn_id for _, turn_id in batch if turn_id]
                node.id_ = f"node-{len(self._nodes):06d}"
                self._nodes[node.node_id] = node
            return list(super().add(nodes, **kwargs))

        def query(self, query: Any, **kwargs: Any) -> Any:
            found = super().query(query, **kwargs)
            nodes = [self._nodes[i] for i in found.ids]
            self._last = list(zip(nodes, found.similarities, strict=True))
            return types.VectorStoreQueryResult(nodes=nodes, similarities=found.similarities, ids=found.ids)

        def clear(self) -> None:
            super().clear()
            self._nodes.clear()
            self._labels.clear()

    return TextVectorStore()


class LlamaIndexMemory(LongTermPeer):
    """`Memory.from_defaults(memory_blocks=[VectorMemoryBlock, FactExtractionMemoryBlock?])` (module docstring).

    Args:
        embedder: memlab's embedder, given to llama-index as its `embed_model`.
        llm: memlab's model, the fact block's LLM (used only with `facts`).
        token_limit: `Memory`'s token_limit.
        token_flush_size: `Memory`'s token_flush_size (tokens per flush, one node each).
        chat_history_token_ratio: `Memory`'s share of token_limit kept in its FIFO.
        facts: add a `FactExtractionMemoryBlock`.
        max_facts: the fact block's max_facts.
        settings: `PeerSettings` (counter, load_max_items, probe_k, retrieve), as `LongTermPeer` takes them.
    """

    libraries = ("llama-index-core",)
    name = "llamaindex_memory"
    user_state = ("store", "vector", "facts", "memory")

    def __init__(
        self,
        embedder: Embedder,
        llm: ChatModel | None = None,
        token_limit: int = DEFAULT_TOKEN_LIMIT,
        token_flush_size: int = DEFAULT_FLUSH_SIZE,
        chat_history_token_ratio: float = DEFAULT_HISTORY_RATIO,
        facts: bool = False,
        max_facts: int = 50,
        **settings: Unpack[PeerSettings],
    ) -> None:
        super().__init__(**settings)
        if facts and llm is None:
            raise MemlabError(f"{ENTRY}: facts=true needs a model (llm=...)")
        self._memory_module = require("llama_index.core.memory", ENTRY)
        self._types = require("llama_index.core.base.llms.types", ENTRY)
        self.token_limit, self.token_flush_size, self.ratio = token_limit, token_flush_size, chat_history_token_ratio
        self.embed_model = llamaindex_embedding(embedder, self.collector, ENTRY)
        self.fact_llm = llamaindex_llm(llm, self.collector, TASK_MEMORY_SUMMARY, ENTRY) if facts and llm else None
        self.max_facts = max_facts
        self._loop = asyncio.new_event_loop()
        # Each Memory's chat store (one per user: the user's FIFO lives in it) is disposed by `release`, after the
        # user's last dialogue or at `close`: an undisposed store leaks its aiosqlite connection and an unclosed loop
        # its two self-pipe sockets, which surface as ResourceWarnings in whatever code runs when the garbage
        # collector frees them (test_plots, which turns warnings into errors).
        weakref.finalize(self, _release, self._loop, os.getpid())
        self.store: Any = None
        self.memory: Any = None
        self.vector: Any = None
        self.facts: Any = None

    def reset(self, user: str) -> None:
        blocks = self._memory_module
        self.store = text_vector_store(ENTRY)
        self.vector = blocks.VectorMemoryBlock(
            name="vector", vector_store=self.store, embed_model=self.embed_model, priority=1
        )
        self.facts = (
            blocks.FactExtractionMemoryBlock(name="facts", llm=self.fact_llm, max_facts=self.max_facts, priority=1)
            if self.fact_llm is not None
            else None
        )
        self.memory = blocks.Memory.from_defaults(
            session_id=user,
            token_limit=self.token_limit,
            token_flush_size=self.token_flush_size,
            chat_history_token_ratio=self.ratio,
            memory_blocks=[b for b in (self.vector, self.facts) if b is not None],
            tokenizer_fn=lambda text: range(self.counter.count_text(text)),
        )

    def add(self, turns: Sequence[Message]) -> int:
        before = self._stored()
        self.store.expect(turns)
        messages = [self._types.ChatMessage(role=_role(m), content=m.text) for m in turns]
        self._loop.run_until_complete(self.memory.aput_messages(messages))
        return self._stored() - before

    def _stored(self) -> int:
        return self.store.nodes + (len(self.facts.facts) if self.facts is not None else 0)

    def search(self, query: str, k: int) -> list[PeerHit]:
        self.vector.similarity_top_k = k
        question = self._types.ChatMessage(role="user", content=query)
        self._loop.run_until_complete(self.vector.aget([question]))
        return [PeerHit(n.text, tuple(n.metadata.get(EVIDENCE, ())), float(s), n.node_id) for n, s in self.store.last()]

    def release(self, state: dict[str, Any]) -> None:
        """Dispose the user's chat store (its aiosqlite connection and thread)."""
        engine = getattr(state["memory"].sql_store, "_async_engine", None)
        if engine is not None:
            self._loop.run_until_complete(engine.dispose())

    def close(self) -> None:
        """Dispose the chat stores still open (`LongTermPeer.close`) and close the event loop."""
        if not self._loop.is_closed():
            super().close()
            self._loop.close()

    def _render(self, hits: Sequence[PeerHit]) -> str:
        """The retrieved nodes, then every extracted fact, as llama-index puts its fact block in the prompt."""
        facts = [PeerHit(f, (), 0.0) for f in (self.facts.facts if self.facts is not None else ())]
        return super()._render([*hits, *facts])


def _release(loop: asyncio.AbstractEventLoop, owner: int) -> None:
    """The peer's finalizer: the loop closed in the process that made it; nothing here waits.

    Disposing a store runs the loop until the store's aiosqlite thread answers, and a finalizer runs wherever the
    garbage collector does: in a worker forked from the process that made the peer, that thread does not exist and
    a disposal waited for ever (a parallel replay hung so). A forked copy leaves the loop alone too: its epoll
    instance is the parent's, and closing it unregisters the parent's wake-up socket. A peer dropped without `close`
    leaves its stores to the collector (aiosqlite's ResourceWarning).
    """
    if os.getpid() == owner:
        loop.close()


def _role(m: Message) -> str:
    """llama-index's role for a memlab turn (a tool result goes in as the user's, its text kept)."""
    return m.role if m.role in ("user", "assistant", "system") else "user"
