"""`longterm=mem0`: mem0's `Memory` (mem0ai, open-source) over an in-process Qdrant, memlab's embedder and model.

Each round's turns go to ``Memory.add(messages, user_id=<user>, metadata={"evidence": ids},
infer=...)``; each question to ``Memory.search(question, top_k=K, filters={"user_id": ...},
threshold=...)``. mem0 is built from its own config (Qdrant in memory, history in an in-memory
SQLite) and then given memlab's embedder and model in place of the providers it builds, so its
calls are counted as memlab's are:

- ``infer: false`` (the offline default): mem0 stores every message as it is, one memory citing
  that turn (mem0's raw mode), no model call: retrieval is mem0's ranking over memlab's embedder;
- ``infer: true``: mem0's extraction (one model call per round with its additive-extraction
  prompt, ``response_format={"type": "json_object"}``) writes the memories; each cites every turn
  of the round it came from. It needs a model that writes mem0's JSON: ``llm=litellm`` (memlab's
  offline extractive model writes memlab's own format, which mem0 reads as "no memories").

mem0's telemetry (PostHog) is switched off (``MEM0_TELEMETRY``, and its module flags when mem0 was
imported before): runs are offline and mem0 draws nothing from the global random generator.
"""

from __future__ import annotations

import logging
import os
import warnings
from collections.abc import Sequence
from typing import Any, Unpack

from memlab.context.peers.base import require
from memlab.embed.base import Embedder
from memlab.errors import MemlabError
from memlab.llm import TASK_EXTRACT_MEMORIES, ChatModel
from memlab.messages import Message
from memlab.peers.adapters import chat_messages, embed_texts
from memlab.peers.component import Collector, LongTermPeer, PeerHit, PeerSettings, evidence_of

ENTRY = "longterm=mem0"
EVIDENCE = "evidence"  # the metadata key holding the turn ids a memory cites
DEFAULT_THRESHOLD = 0.1  # mem0's `search` default: memories scoring lower are dropped
_PAYLOAD_INDEX_WARNING = "Payload indexes have no effect in the local Qdrant"  # qdrant-client's words


class _Embedding:
    """mem0's embedder interface (`embed`, `embed_batch`) over memlab's `Embedder`."""

    def __init__(self, embedder: Embedder, collector: Collector) -> None:
        self.embedder, self.collector = embedder, collector

    def embed(self, text: str, memory_action: str | None = None) -> list[float]:
        return embed_texts(self.embedder, self.collector, [text])[0]

    def embed_batch(self, texts: list[str], memory_action: str | None = None) -> list[list[float]]:
        return embed_texts(self.embedder, self.collector, texts)


class _LLM:
    """mem0's LLM interface (`generate_response`) over memlab's `ChatModel` (an extraction task)."""

    def __init__(self, llm: ChatModel, collector: Collector) -> None:
        self.llm, self.collector = llm, collector

    def generate_response(self, messages: list[dict[str, Any]], response_format: Any = None, **kwargs: Any) -> str:
        params = {"response_format": response_format} if response_format else {}
        request = chat_messages(messages)
        return self.collector.call(lambda: self.llm.complete(request, task=TASK_EXTRACT_MEMORIES, **params)).text


class _Once(logging.Filter):
    """Lets each distinct message through once."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: set[str] = set()

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        if message in self.seen:
            return False
        self.seen.add(message)
        return True


def _once_per_run(logger: logging.Logger) -> None:
    """Each of `logger`'s messages once from now on: mem0 warns that fastembed is missing (its BM25 side off) each time
    it builds a vector store, once a user here (LongMemEval: 500 lines). The filter of an earlier peer is replaced."""
    for old in [f for f in logger.filters if isinstance(f, _Once)]:
        logger.removeFilter(old)
    logger.addFilter(_Once())


class Mem0Memory(LongTermPeer):
    """mem0's `Memory` (module docstring).

    Args:
        embedder: memlab's embedder, set as mem0's `embedding_model`.
        llm: memlab's model, set as mem0's `llm` (used only with `infer`).
        infer: mem0 extracts memories with the model (true) or stores each turn as it is (false).
        threshold: mem0's search threshold.
        settings: `PeerSettings` (counter, load_max_items, probe_k, retrieve), as `LongTermPeer` takes them.
    """

    libraries = ("mem0ai", "qdrant-client")
    name = "mem0"
    user_state = ("memory",)

    def __init__(
        self,
        embedder: Embedder,
        llm: ChatModel | None = None,
        infer: bool = False,
        threshold: float = DEFAULT_THRESHOLD,
        **settings: Unpack[PeerSettings],
    ) -> None:
        super().__init__(**settings)
        if infer and llm is None:
            raise MemlabError(f"{ENTRY}: infer=true needs a model (llm=litellm)")
        os.environ["MEM0_TELEMETRY"] = "False"  # read when mem0 is first imported ...
        self._mem0 = require("mem0", ENTRY)
        for module in ("mem0.memory.telemetry", "mem0.memory.main"):  # ... and switched off if it was imported before
            vars(require(module, ENTRY))["MEM0_TELEMETRY"] = False
        logging.getLogger("mem0").setLevel(logging.WARNING)  # mem0 logs every vector insert at INFO
        _once_per_run(logging.getLogger("mem0.vector_stores.qdrant"))
        # mem0 asks Qdrant for payload indexes, which the in-process Qdrant memlab gives it (offline) ignores and
        # warns of in every run: nothing a user of this entry can act on. Only that message is ignored.
        warnings.filterwarnings("ignore", message=_PAYLOAD_INDEX_WARNING, category=UserWarning)
        self._qdrant = require("qdrant_client", ENTRY)
        self.embedder, self.llm, self.infer, self.threshold = embedder, llm, infer, threshold
        self.memory: Any = None

    def reset(self, user: str) -> None:
        config = {
            "vector_store": {
                "provider": "qdrant",
                "config": {
                    "collection_name": "memlab",
                    "embedding_model_dims": self.embedder.dim,
                    "client": self._qdrant.QdrantClient(location=":memory:"),
                },
            },
            "embedder": {"provider": "openai", "config": {"api_key": "unused", "embedding_dims": self.embedder.dim}},
            "llm": {"provider": "litellm", "config": {"model": getattr(self.llm, "name", "memlab")}},
            "history_db_path": ":memory:",
        }
        self.memory = self._mem0.Memory.from_config(config)
        self.memory.embedding_model = _Embedding(
            self.embedder, self.collector
        )  # memlab's, in place of mem0's providers
        if self.llm is not None:
            self.memory.llm = _LLM(self.llm, self.collector)

    def add(self, turns: Sequence[Message]) -> int:
        if self.infer:
            found = self._add(turns, evidence_of(turns))
        else:  # one memory per turn, citing it: mem0 gives a call's metadata to every message of it
            found = [r for m in turns for r in self._add([m], evidence_of([m]))]
        added = [r for r in found if r.get("event") == "ADD"]
        for r in added:
            self.memory_id(str(r.get("id")))
        return len(added)

    def _add(self, turns: Sequence[Message], evidence: tuple[str, ...]) -> list[dict[str, Any]]:
        messages = [{"role": m.role if m.role in ("user", "assistant") else "user", "content": m.text} for m in turns]
        out = self.memory.add(messages, user_id=self.user, metadata={EVIDENCE: list(evidence)}, infer=self.infer)
        return list(out.get("results", ()))

    def search(self, query: str, k: int) -> list[PeerHit]:
        found = self.memory.search(query, top_k=k, filters={"user_id": self.user}, threshold=self.threshold)
        rows = found.get("results", ()) if isinstance(found, dict) else found
        return [
            PeerHit(
                r["memory"],
                tuple((r.get("metadata") or {}).get(EVIDENCE, ())),
                float(r.get("score") or 0.0),
                self.memory_id(str(r.get("id"))),
            )
            for r in rows
        ]
