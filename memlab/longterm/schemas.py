"""Structured configs of the `longterm` and `policy` groups (validated by Hydra at start)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from memlab import ranges
from memlab.longterm import component, service
from memlab.longterm.index import IndexSpec
from memlab.longterm.service import DEFAULT_TYPES


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
    store: Any = "${store}"
    """Long-term memories live in the run's store (store=memory|sqlite|postgres|mysql)."""
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
    retrieve: str = "session_start"
    """When memories are retrieved: session_start, or every_turn (step 1 of every ReAct iteration)."""


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
