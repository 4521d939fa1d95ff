"""Structured configs of the `longterm` and `policy` groups (validated by Hydra at start)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from memlab import ranges
from memlab.longterm.index import IndexSpec
from memlab.longterm.rerank import DEFAULT_PIPELINE, RerankStages
from memlab.longterm.revision import RevisionRule
from memlab.longterm.service import DEFAULT_TYPES
from memlab.longterm.settings import LongTermSettings, ServiceRules

PROBE_K = 20  # the deepest cut-off of longterm.recall@K


@dataclass
class AgentOverrides:
    """One `agents.<id>` entry: the settings that differ from the defaults for that agent."""

    enabled: bool | None = None
    """Long-term memory on for this agent (null: the default)."""
    namespace: str | None = None
    """Its namespace prefix (null: the default)."""
    max_items: int | None = ranges.count(None)
    """Memories kept per user (null: the default)."""
    auto_extract: bool | None = None
    """Extract memories after each round (null: the default)."""
    auto_load: bool | None = None
    """Load memories at session start (null: the default)."""
    load_max_items: int | None = ranges.count(None)
    """Memories injected (null: the default)."""
    memory_tools: bool | None = None
    """Offer memory_save / memory_search (null: the default)."""


@dataclass
class TypeSpec:
    """`types.<TYPE>`: retrieval weight, half-life in days without access, optional expiry in days."""

    weight: float = ranges.ranged(1.0, ge=0)
    """Retrieval weight of the type."""
    half_life_days: float | None = ranges.positive(None)
    """Days without access after which the score halves (null: no decay)."""
    ttl_days: float | None = ranges.positive(None)
    """Days after which a memory of the type expires (null: never)."""


def _default_types() -> dict[str, TypeSpec]:
    return {str(t): TypeSpec(p.weight, p.half_life_days, p.ttl_days) for t, p in DEFAULT_TYPES.items()}


@dataclass
class LongTermConfig(ServiceRules, LongTermSettings):
    """`longterm=<entry>`: the design document's keys (snake case) plus memlab's retrieval settings.

    The component is built from this config itself (`LongTermMemoryComponent(config)`) and hands the service its
    settings and rules as this config's own bases (`memlab.longterm.settings`): each knob is declared once.
    """

    _target_: str = "memlab.longterm.LongTermMemoryComponent.from_config"
    """What Hydra builds from the entry: the component, from this config."""
    embedder: Any = "${embedder}"
    """The embeddings of retrieval (the run's embedder)."""
    llm: Any = "${llm}"
    """The model that extracts memories (the run's llm)."""
    counter: str = "${tokenizer}"
    """Counts the injected block's tokens."""
    store: Any = "${store}"
    """Long-term memories live in the run's store (store=memory|sqlite|postgres|mysql)."""
    agents: dict[str, AgentOverrides] = field(default_factory=dict)
    """Per-agent settings that differ from the defaults (`agents.<id>`)."""
    types: dict[str, TypeSpec] = field(default_factory=_default_types)
    """Per-type retrieval weight, decay and expiry."""
    index: IndexSpec = field(default_factory=IndexSpec)
    """The search index and its parameters (BM25, dense, their fusion; feedback is stage `feedback`)."""
    rerank: list[str] = field(default_factory=lambda: list(DEFAULT_PIPELINE))
    """The re-ranking stages after the index, in order (memlab.longterm.rerank): e.g. [decay,dedup]."""
    stages: RerankStages = field(default_factory=RerankStages)
    """Each re-ranking stage's knobs, by name (`stages.updates.similarity` ...)."""
    revision: RevisionRule = field(default_factory=RevisionRule)
    """Save time: which older memories a new one revises (memlab.longterm.revision), read by stage revisions."""
    probe_k: int = ranges.ranged(PROBE_K, ge=1)
    """The deepest cut-off of longterm.recall@K."""
    background: bool = False
    """Extract in a background worker drained at session end (else inline, reproducible)."""
    cleanup_at_session_end: bool = True
    """Run the cleanup job at every session end."""
    retrieve: str = "session_start"
    """When memories are retrieved: session_start, or every_turn (step 1 of every ReAct iteration)."""


@dataclass
class AutoPolicyConfig:
    """`policy=auto`: the llm's own tool calling when it has it, the offline rules otherwise."""

    _target_: str = "memlab.longterm.model_or_rules"
    llm: Any = "${llm}"
    """The model whose tool calling decides, when its backend has it."""


@dataclass
class RulePolicyConfig:
    """`policy=rules`: the deterministic memory-tool policy (memlab.longterm.policy)."""

    _target_: str = "memlab.longterm.MemoryRulePolicy"


LONGTERM_ENTRIES = ("default", "chat", "locomo", "locomo_semantic")
SCHEMAS: dict[tuple[str, str], type] = {("longterm", name): LongTermConfig for name in LONGTERM_ENTRIES}
SCHEMAS[("policy", "auto")] = AutoPolicyConfig
SCHEMAS[("policy", "rules")] = RulePolicyConfig
