"""The runtime `Component` that puts long-term memory into the agent loop.

Retrieval (steps 1-2 of the ReAct iteration), set by `retrieve`: ``session_start`` (the design
document's "会话开始时触发") loads the memories relevant to the session's first message once;
``every_turn`` retrieves again for each user message, at the start of every iteration. Either way
the block is injected by a request stage at order 20 (ORDER_LONGTERM_INJECT). With memory tools
on, every request offers ``memory_save`` / ``memory_search`` and the component runs the calls the
tool policy makes. At the end of each iteration (the reply is in the history): extract and save,
awaited right there in the simulator so runs stay reproducible, or handed to a background worker
(`background=True`) that is drained at session end. Session end: the cleanup job. Probe:
retrieve with the question, inject the top `load_max_items`, and report the evidence ids and
sources of the retrieved memories (best first) and the injected tokens.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from omegaconf import DictConfig, OmegaConf

from memlab.embed.base import Embedder
from memlab.errors import MemlabError
from memlab.llm.base import ChatModel
from memlab.longterm.index import IndexSpec
from memlab.longterm.injection import InjectStage, render_block
from memlab.longterm.model import MemoryType, Retrieved, TypePolicy
from memlab.longterm.service import (
    DEFAULT_ARCHIVE_MIN_ACCESS,
    DEFAULT_ARCHIVE_THRESHOLD,
    DEFAULT_AUTO_EXTRACT,
    DEFAULT_AUTO_LOAD,
    DEFAULT_ENABLED,
    DEFAULT_LOAD_MAX_ITEMS,
    DEFAULT_MAX_MEMORIES,
    DEFAULT_MEMORY_TOOLS,
    DEFAULT_NAMESPACE,
    DEFAULT_SUPERSEDE_SIMILARITY,
    ExtractionWorker,
    LongTermMemoryService,
    LongTermSettings,
)
from memlab.longterm.store import MemoryStore
from memlab.longterm.tools import TOOL_NAMES, MemoryToolProvider
from memlab.longterm.updates import UpdateSpec
from memlab.messages import Message, ToolCall
from memlab.runtime.agent import ORDER_LONGTERM_INJECT, Component, RequestStage, Runtime
from memlab.tokens import resolve_counter

if TYPE_CHECKING:
    from memlab.dialogues.model import Dialogue, Probe, Session

PROBE_K = 20  # the deepest cut-off of longterm.recall@K
RESULT_EVIDENCE = "longterm.retrieved_evidence"
RESULT_SOURCES = "longterm.retrieved_sources"  # the channel that saved each retrieved memory
RETRIEVE_SESSION_START = "session_start"
RETRIEVE_EVERY_TURN = "every_turn"
RETRIEVE_MODES = (RETRIEVE_SESSION_START, RETRIEVE_EVERY_TURN)
RESULT_INJECTED_TOKENS = "longterm.injected_tokens"


def _plain(node: Any) -> Any:
    """A config node (DictConfig, dataclass or plain) as plain Python containers."""
    if isinstance(node, DictConfig):
        return OmegaConf.to_container(node, resolve=True)
    if dataclasses.is_dataclass(node) and not isinstance(node, type):
        return dataclasses.asdict(node)
    return node


def type_policies(types: Mapping[str, Any] | None) -> dict[MemoryType, TypePolicy]:
    """``{"FACT": {"weight": .., "half_life_days": ..}}`` as policies (keys are case-insensitive)."""
    return {MemoryType.parse(name): TypePolicy(**_plain(spec)) for name, spec in (_plain(types) or {}).items()}


class LongTermMemoryComponent(Component):
    """Long-term memory in the simulated agent (see the module docstring)."""

    def __init__(
        self,
        embedder: Embedder,
        llm: ChatModel | None = None,
        counter: str = "cl100k_base",
        store: Any = None,
        enabled: bool = DEFAULT_ENABLED,
        namespace: str = DEFAULT_NAMESPACE,
        max_items: int = DEFAULT_MAX_MEMORIES,
        auto_extract: bool = DEFAULT_AUTO_EXTRACT,
        auto_load: bool = DEFAULT_AUTO_LOAD,
        load_max_items: int = DEFAULT_LOAD_MAX_ITEMS,
        memory_tools: bool = DEFAULT_MEMORY_TOOLS,
        agents: Mapping[str, Any] | None = None,
        types: Mapping[str, Any] | None = None,
        index: Any = None,
        language: str = "en",
        dedup_auto_extract: bool = False,
        archive_threshold: float = DEFAULT_ARCHIVE_THRESHOLD,
        archive_min_access: int = DEFAULT_ARCHIVE_MIN_ACCESS,
        supersede_similarity: float | None = DEFAULT_SUPERSEDE_SIMILARITY,
        probe_k: int = PROBE_K,
        background: bool = False,
        cleanup_at_session_end: bool = True,
        retrieve: str = RETRIEVE_SESSION_START,
        updates: Any = None,
    ) -> None:
        if retrieve not in RETRIEVE_MODES:
            raise MemlabError(f"longterm.retrieve: {retrieve!r} is not one of {', '.join(RETRIEVE_MODES)}")
        self.retrieve = retrieve
        defaults = LongTermSettings(
            enabled, namespace, max_items, auto_extract, auto_load, load_max_items, memory_tools
        )
        self.service = LongTermMemoryService(
            MemoryStore(store),
            embedder,
            llm,
            defaults=defaults,
            agents={name: _plain(o) for name, o in (_plain(agents) or {}).items()},
            types=type_policies(types),
            index=IndexSpec(**(_plain(index) or {})),
            language=language,
            dedup_auto_extract=dedup_auto_extract,
            archive_threshold=archive_threshold,
            archive_min_access=archive_min_access,
            supersede_similarity=supersede_similarity,
            updates=UpdateSpec(**(_plain(updates) or {})),
        )
        self.tool_provider = MemoryToolProvider(self.service)
        self.counter = resolve_counter(counter)
        self.probe_k = probe_k
        self.cleanup_at_session_end = cleanup_at_session_end
        self.worker = ExtractionWorker(self.service) if background else None
        self._stage = InjectStage(ORDER_LONGTERM_INJECT)
        self._pending: list[Message] = []

    @property
    def block(self) -> str:
        """The ``<long_term_memory>`` block the next request gets ("" for none)."""
        return self._stage.block

    def stages(self) -> Sequence[RequestStage]:
        return (self._stage,)

    def render(self, hits: Sequence[Retrieved]) -> str:
        return render_block([(str(h.memory.type), h.memory.content, h.score) for h in hits], self.service.language)

    def on_dialogue_start(self, runtime: Runtime, dialogue: Dialogue) -> None:
        self._pending = []
        self._stage.block = ""

    def on_session_start(self, runtime: Runtime, session: Session) -> None:
        self._stage.block = ""
        if self.retrieve == RETRIEVE_EVERY_TURN:  # each iteration retrieves; a new session reads the store afresh
            self.service.refresh(runtime.context())
            return
        first = next(
            (m for m in session.messages if m.role == "user"), session.messages[0] if session.messages else None
        )
        if first is None or not first.text.strip():
            return
        self._stage.block = self.render(self.service.load_memories(runtime.context(first.text), first.text))

    def before_iteration(self, runtime: Runtime, query: str | None) -> None:
        if self.retrieve != RETRIEVE_EVERY_TURN or query is None or not query.strip():
            return
        settings = self.service.settings(runtime.security.agent_id)
        if settings.enabled and settings.auto_load:
            ctx = runtime.context(query)
            self._stage.block = self.render(self.service.search(ctx, query, settings.load_max_items))

    def tools(self, runtime: Runtime) -> Sequence[dict[str, Any]]:
        return self.tool_provider.schemas(runtime.security.agent_id)

    def call_tool(self, runtime: Runtime, call: ToolCall) -> Message | None:
        if call.name not in TOOL_NAMES:
            return None
        return self.tool_provider.execute(runtime.context(), call)

    def on_message(self, runtime: Runtime, message: Message) -> None:
        self._pending.append(message)

    def on_iteration_end(self, runtime: Runtime, reply: Message) -> None:
        if reply.role == "assistant":  # a round is complete
            self._flush(runtime)

    def on_session_end(self, runtime: Runtime, session: Session) -> None:
        self._flush(runtime)
        if self.worker is not None:
            self.worker.drain()
        if self.cleanup_at_session_end and self.service.settings(runtime.security.agent_id).enabled:
            self.service.cleanup(runtime.context())

    def on_probe(self, runtime: Runtime, probe: Probe) -> dict[str, object]:
        if self.worker is not None:
            self.worker.drain()
        settings = self.service.settings(runtime.security.agent_id)
        if not settings.enabled:
            return {}
        ctx = runtime.context(probe.question)
        hits = self.service.search(ctx, probe.question, max(self.probe_k, settings.load_max_items))
        self._stage.block = self.render(hits[: settings.load_max_items])
        return {
            RESULT_EVIDENCE: [list(h.memory.evidence) for h in hits],
            RESULT_SOURCES: [h.memory.source for h in hits],
            RESULT_INJECTED_TOKENS: self.counter.count_text(self._stage.block) if self._stage.block else 0,
        }

    def checkpoint(self) -> dict[str, Any]:
        if self.worker is not None:
            self.worker.drain()
        return {"pending": list(self._pending), "block": self._stage.block, "service": self.service.checkpoint_state()}

    def restore(self, state: dict[str, Any]) -> None:
        self._pending, self._stage.block = list(state["pending"]), state["block"]
        self.service.restore_state(state["service"])

    def _flush(self, runtime: Runtime) -> None:
        if not self._pending:
            return
        turns, self._pending = self._pending, []
        if self.worker is not None:
            self.worker.submit(runtime.context(), turns)
        else:
            self.service.extract_and_save(runtime.context(), turns)
