"""Long-term memory: typed memories per agent and user, extraction, retrieval, tools, decay, injection."""

from dataclasses import dataclass, field
from typing import Any

from memlab import ranges
from memlab.longterm import component, service
from memlab.longterm.component import (
    RESULT_EVIDENCE,
    RESULT_INJECTED_TOKENS,
    RESULT_SOURCES,
    RETRIEVE_MODES,
    LongTermMemoryComponent,
)
from memlab.longterm.extraction import SKIP_LAYERS, should_skip_extraction
from memlab.longterm.index import ExactIndex, HnswIndex, HybridIndex, IndexSpec, make_index
from memlab.longterm.injection import escape_content, parse_block, render_block
from memlab.longterm.model import (
    SOURCE_AGENT_TOOL,
    SOURCE_AUTO_EXTRACT,
    Memory,
    MemoryType,
    Retrieved,
    TypePolicy,
    namespace_of,
)
from memlab.longterm.policy import MemoryRulePolicy, asks_about_past, durable_statement, model_or_rules
from memlab.longterm.service import (
    DEFAULT_TYPES,
    ExtractionWorker,
    LongTermMemoryService,
    LongTermSettings,
    SaveResult,
    decayed_score,
)
from memlab.longterm.store import MemoryStore
from memlab.longterm.tools import MEMORY_SAVE, MEMORY_SEARCH, MemoryToolProvider


@dataclass
class AgentOverrides:
    """One `agents.<id>` entry: the settings that differ from the defaults for that agent."""

    enabled: bool | None = None
    namespace: str | None = None
    max_items: int | None = ranges.count(None)
    auto_extract: bool | None = None
    auto_load: bool | None = None
    load_max_items: int | None = ranges.count(None)
    memory_tools: bool | None = None


@dataclass
class TypeSpec:
    """`types.<TYPE>`: retrieval weight, half-life in days without access, optional expiry in days."""

    weight: float = ranges.ranged(1.0, ge=0)
    half_life_days: float | None = ranges.positive(None)
    ttl_days: float | None = ranges.positive(None)


def _default_types() -> dict[str, TypeSpec]:
    return {str(t): TypeSpec(p.weight, p.half_life_days, p.ttl_days) for t, p in DEFAULT_TYPES.items()}


@dataclass
class LongTermConfig:
    """`longterm=<entry>`: the design document's keys (snake case) plus memlab's retrieval settings."""

    _target_: str = "memlab.longterm.LongTermMemoryComponent"
    embedder: Any = "${embedder}"
    llm: Any = "${llm}"
    counter: str = "${tokenizer}"
    store: Any = "${store}"  # long-term memories live in the run's store (store=memory|sqlite|postgres|mysql)
    enabled: bool = service.DEFAULT_ENABLED
    namespace: str = service.DEFAULT_NAMESPACE
    max_items: int = ranges.count(service.DEFAULT_MAX_MEMORIES)
    auto_extract: bool = service.DEFAULT_AUTO_EXTRACT
    auto_load: bool = service.DEFAULT_AUTO_LOAD
    load_max_items: int = ranges.count(service.DEFAULT_LOAD_MAX_ITEMS)
    memory_tools: bool = service.DEFAULT_MEMORY_TOOLS
    agents: dict[str, AgentOverrides] = field(default_factory=dict)
    types: dict[str, TypeSpec] = field(default_factory=_default_types)
    index: IndexSpec = field(default_factory=IndexSpec)
    language: str = "en"
    dedup_auto_extract: bool = False
    archive_threshold: float = ranges.ranged(service.DEFAULT_ARCHIVE_THRESHOLD, ge=0)
    archive_min_access: int = ranges.count(service.DEFAULT_ARCHIVE_MIN_ACCESS)
    supersede_similarity: float | None = ranges.ranged(service.DEFAULT_SUPERSEDE_SIMILARITY, ge=-1, le=1)
    probe_k: int = ranges.ranged(component.PROBE_K, ge=1)
    background: bool = False
    cleanup_at_session_end: bool = True
    retrieve: str = "session_start"  # session_start | every_turn: step 1 of every ReAct iteration


@dataclass
class AutoPolicyConfig:
    """`policy=auto`: the llm's own tool calling when it has it, the offline rules otherwise."""

    _target_: str = "memlab.longterm.model_or_rules"
    llm: Any = "${llm}"


@dataclass
class RulePolicyConfig:
    """`policy=rules`: the deterministic memory-tool policy (memlab.longterm.policy)."""

    _target_: str = "memlab.longterm.MemoryRulePolicy"


SCHEMAS: dict[tuple[str, str], type] = {("longterm", name): LongTermConfig for name in ("default", "chat", "locomo")}
SCHEMAS[("policy", "auto")] = AutoPolicyConfig
SCHEMAS[("policy", "rules")] = RulePolicyConfig

__all__ = [
    "DEFAULT_TYPES",
    "MEMORY_SAVE",
    "MEMORY_SEARCH",
    "RESULT_EVIDENCE",
    "RESULT_INJECTED_TOKENS",
    "RESULT_SOURCES",
    "RETRIEVE_MODES",
    "SCHEMAS",
    "SKIP_LAYERS",
    "SOURCE_AGENT_TOOL",
    "SOURCE_AUTO_EXTRACT",
    "AgentOverrides",
    "ExactIndex",
    "ExtractionWorker",
    "HnswIndex",
    "HybridIndex",
    "IndexSpec",
    "LongTermConfig",
    "LongTermMemoryComponent",
    "LongTermMemoryService",
    "LongTermSettings",
    "Memory",
    "MemoryRulePolicy",
    "MemoryStore",
    "MemoryToolProvider",
    "MemoryType",
    "Retrieved",
    "SaveResult",
    "TypePolicy",
    "TypeSpec",
    "asks_about_past",
    "decayed_score",
    "durable_statement",
    "escape_content",
    "make_index",
    "model_or_rules",
    "namespace_of",
    "parse_block",
    "render_block",
    "should_skip_extraction",
]
