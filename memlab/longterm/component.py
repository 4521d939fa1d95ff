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
from typing import TYPE_CHECKING, Any, TypeVar

from omegaconf import DictConfig, OmegaConf

from memlab.errors import MemlabError
from memlab.longterm.index import IndexSpec
from memlab.longterm.injection import InjectStage, render_block
from memlab.longterm.model import MemoryType, Retrieved, TypePolicy
from memlab.longterm.rerank import build_pipeline
from memlab.longterm.retrievals import RESULT_RETRIEVAL, retrieval_entry
from memlab.longterm.revision import RevisionRule
from memlab.longterm.schemas import LongTermConfig
from memlab.longterm.service import ExtractionWorker, LongTermMemoryService
from memlab.longterm.settings import LongTermSettings, ServiceRules
from memlab.longterm.store import MemoryStore
from memlab.longterm.tools import TOOL_NAMES, MemoryToolProvider
from memlab.messages import Message, ToolCall
from memlab.runtime.agent import ORDER_LONGTERM_INJECT, Component, RequestStage, Runtime
from memlab.tokens import resolve_counter

if TYPE_CHECKING:
    from memlab.dialogues.model import Dialogue, Probe, Session

RESULT_EVIDENCE = "longterm.retrieved_evidence"
RESULT_SOURCES = "longterm.retrieved_sources"  # the channel that saved each retrieved memory
RETRIEVE_SESSION_START = "session_start"
RETRIEVE_EVERY_TURN = "every_turn"
RETRIEVE_MODES = (RETRIEVE_SESSION_START, RETRIEVE_EVERY_TURN)
RESULT_INJECTED_TOKENS = "longterm.injected_tokens"
B = TypeVar("B", LongTermSettings, ServiceRules)


def _plain(node: Any) -> Any:
    """A config node (DictConfig, dataclass or plain) as plain Python containers."""
    if isinstance(node, DictConfig):
        return OmegaConf.to_container(node, resolve=True)
    if dataclasses.is_dataclass(node) and not isinstance(node, type):
        return dataclasses.asdict(node)
    return node


def _base(config: LongTermConfig, base: type[B]) -> B:
    """`config`'s values of the fields it inherits from `base`, as a `base` (what the service takes)."""
    return base(**{f.name: getattr(config, f.name) for f in dataclasses.fields(base)})


def type_policies(types: Mapping[str, Any] | None) -> dict[MemoryType, TypePolicy]:
    """``{"FACT": {"weight": .., "half_life_days": ..}}`` as policies (keys are case-insensitive)."""
    return {MemoryType.parse(name): TypePolicy(**_plain(spec)) for name, spec in (_plain(types) or {}).items()}


class LongTermMemoryComponent(Component):
    """Long-term memory in the simulated agent (see the module docstring), built from its typed config.

    Args:
        config: The `longterm` entry (`LongTermConfig`, whose fields document each knob).
    """

    keeps_user_state = True  # a user's memories outlive the dialogue that made them

    @classmethod
    def from_config(cls, **fields: Any) -> LongTermMemoryComponent:
        """The component of a `longterm` config entry (its `_target_`): `fields` are `LongTermConfig`'s."""
        return cls(LongTermConfig(**fields))

    def __init__(self, config: LongTermConfig) -> None:
        if config.retrieve not in RETRIEVE_MODES:
            raise MemlabError(f"longterm.retrieve: {config.retrieve!r} is not one of {', '.join(RETRIEVE_MODES)}")
        self.retrieve = config.retrieve
        self.service = LongTermMemoryService(
            MemoryStore(config.store),
            config.embedder,
            config.llm,
            defaults=_base(config, LongTermSettings),
            agents={name: _plain(o) for name, o in (_plain(config.agents) or {}).items()},
            types=type_policies(config.types),
            index=IndexSpec(**(_plain(config.index) or {})),
            rerank=build_pipeline(list(config.rerank), config.stages),
            revision=RevisionRule(**(_plain(config.revision) or {})),
            rules=_base(config, ServiceRules),
        )
        self.tool_provider = MemoryToolProvider(self.service)
        self.counter = resolve_counter(config.counter)
        self.probe_k = config.probe_k
        self.cleanup_at_session_end = config.cleanup_at_session_end
        self.worker = ExtractionWorker(self.service) if config.background else None
        self._stage = InjectStage(ORDER_LONGTERM_INJECT)
        self._pending: list[Message] = []

    @property
    def block(self) -> str:
        """The ``<long_term_memory>`` block the next request gets ("" for none)."""
        return self._stage.block

    def stages(self) -> Sequence[RequestStage]:
        return (self._stage,)

    def render(self, hits: Sequence[Retrieved]) -> str:
        rows = [(str(h.memory.type), h.memory.content, h.score) for h in hits]
        return render_block(rows, self.service.rules.language)

    def on_dialogue_start(self, runtime: Runtime, dialogue: Dialogue) -> None:
        self._pending = []
        self._stage.block = ""

    def on_session_start(self, runtime: Runtime, session: Session) -> None:
        self._stage.block = ""
        if self.retrieve == RETRIEVE_EVERY_TURN:  # each iteration retrieves (and a search reads what others changed)
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
        ranking = self.service.retrieve(ctx, probe.question, max(self.probe_k, settings.load_max_items), trace=True)
        hits = ranking.hits
        self._stage.block = self.render(hits[: settings.load_max_items])
        return {
            RESULT_EVIDENCE: [list(h.memory.evidence) for h in hits],
            RESULT_SOURCES: [h.memory.source for h in hits],
            RESULT_INJECTED_TOKENS: self.counter.count_text(self._stage.block) if self._stage.block else 0,
            RESULT_RETRIEVAL: retrieval_entry(ranking, probe.evidence),
        }

    def checkpoint(self) -> dict[str, Any]:
        if self.worker is not None:
            self.worker.drain()
        return {"pending": list(self._pending), "block": self._stage.block, "service": self.service.checkpoint_state()}

    def restore(self, state: dict[str, Any]) -> None:
        self._pending, self._stage.block = list(state["pending"]), state["block"]
        self.service.restore_state(state["service"])

    def close(self) -> None:
        if self.worker is not None:
            self.worker.close()
        self.service.store.close()  # its pooled connections, which a sweep's later runs would otherwise hold

    def _flush(self, runtime: Runtime) -> None:
        if not self._pending:
            return
        turns, self._pending = self._pending, []
        if self.worker is not None:
            self.worker.submit(runtime.context(), turns)
        else:
            self.service.extract_and_save(runtime.context(), turns)
