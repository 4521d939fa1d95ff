"""Structured configs of the `memory` and `agent_memory` groups (validated by Hydra at start)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from memlab import ranges
from memlab.memory.composed import DEFAULT_KEEP_ROUNDS
from memlab.memory.compressors import DEFAULT_WINDOW_ITEMS
from memlab.memory.strategies import (
    DEFAULT_KEEP_FIRST,
    DEFAULT_KEEP_LAST,
    DEFAULT_KEEP_LATEST,
    DEFAULT_SUMMARY_KEEP_LAST,
    DEFAULT_SUMMARY_THRESHOLD,
    MAX_CONVERSATION_CHARS,
)

# --- memory: a MemoryCleanupService with a typed strategy node -----------------------------


@dataclass
class TrimConfig:
    _target_: str = "memlab.memory.TrimStrategy"
    keep_first: int = ranges.count(DEFAULT_KEEP_FIRST)
    keep_last: int = ranges.count(DEFAULT_KEEP_LAST)


@dataclass
class SummarizeConfig:
    _target_: str = "memlab.memory.SummarizeStrategy"
    llm: Any = "${llm}"
    threshold: int = ranges.ranged(DEFAULT_SUMMARY_THRESHOLD, ge=1)
    keep_last: int = ranges.count(DEFAULT_SUMMARY_KEEP_LAST)
    language: str = "auto"  # auto | en | zh
    max_conversation_chars: int = ranges.positive(MAX_CONVERSATION_CHARS)
    max_tokens: int | None = ranges.positive(None)
    counter: str = "${tokenizer}"


@dataclass
class DeleteConfig:
    _target_: str = "memlab.memory.DeleteStrategy"
    keep_latest: int = ranges.count(DEFAULT_KEEP_LATEST)


@dataclass
class FilterRuleConfig:
    """Keep messages of `roles` (any if empty) containing a keyword or matching a pattern (any text if both empty)."""

    roles: list[str] = field(default_factory=list)
    keywords: list[str] = field(default_factory=list)
    patterns: list[str] = field(default_factory=list)


def _document_filter() -> list[FilterRuleConfig]:
    """The design document's example: every user message, and assistant messages that contain 重要."""
    return [FilterRuleConfig(roles=["user"]), FilterRuleConfig(roles=["assistant"], keywords=["重要"])]


@dataclass
class FilterConfig:
    _target_: str = "memlab.memory.FilterStrategy"
    rules: list[FilterRuleConfig] = field(default_factory=_document_filter)


@dataclass
class CleanupConfig:
    """When the cleanup runs: at each session end, and every N messages or N seconds of virtual time."""

    _target_: str = "memlab.memory.MemoryCleanupService"
    on_session_end: bool = True
    every_turns: int | None = ranges.ranged(None, ge=1)
    every_seconds: float | None = ranges.positive(None)


@dataclass
class TrimCleanupConfig(CleanupConfig):
    strategy: TrimConfig = field(default_factory=TrimConfig)


@dataclass
class SummarizeCleanupConfig(CleanupConfig):
    strategy: SummarizeConfig = field(default_factory=SummarizeConfig)


@dataclass
class DeleteCleanupConfig(CleanupConfig):
    strategy: DeleteConfig = field(default_factory=DeleteConfig)


@dataclass
class FilterCleanupConfig(CleanupConfig):
    strategy: FilterConfig = field(default_factory=FilterConfig)


# --- agent_memory: a callable session_id -> History ------------------------------------------


@dataclass
class ChatHistoryConfig:
    """`agent_memory=chat`: a plain ChatMemory per dialogue in the configured store."""

    _target_: str = "memlab.memory.chat_history"
    _partial_: bool = True
    store: Any = "${store}"
    fresh: bool = True


@dataclass
class WindowedConfig:
    _target_: str = "memlab.memory.WindowedMemoryCompressor"
    max_items: int = ranges.ranged(DEFAULT_WINDOW_ITEMS, ge=1)


@dataclass
class HybridConfig:
    _target_: str = "memlab.memory.HybridMemoryCompressor"
    max_items: int = ranges.ranged(DEFAULT_WINDOW_ITEMS, ge=1)
    llm: Any = "${llm}"
    language: str = "auto"
    max_tokens: int | None = ranges.positive(None)
    counter: str = "${tokenizer}"


@dataclass
class TaskSegmentedConfig:
    _target_: str = "memlab.memory.TaskSegmentedCompressor"
    keep_tasks: int = ranges.count(1)
    boundary_role: str = "user"
    llm: Any = "${llm}"
    language: str = "auto"
    max_tokens: int | None = ranges.positive(None)
    counter: str = "${tokenizer}"


@dataclass
class ToolRoundsConfig:
    _target_: str = "memlab.memory.ToolRoundsCompressor"
    keep_rounds: int = ranges.count(DEFAULT_KEEP_ROUNDS)
    llm: Any = "${llm}"
    language: str = "auto"
    max_tokens: int | None = ranges.positive(None)


@dataclass
class ChainConfig:
    """Compressors applied in order on every write (each a node with its own `_target_`)."""

    _target_: str = "memlab.memory.ChainCompressor"
    _convert_: str = "all"  # plain lists, so a dataclass compressor is not turned back into a config node
    stages: list[Any] = field(default_factory=list)


@dataclass
class AgentHistoryConfig:
    """An AgentMemory per dialogue in the configured store, compressed after every write."""

    _target_: str = "memlab.memory.agent_history"
    _partial_: bool = True
    store: Any = "${store}"
    fresh: bool = True


@dataclass
class WindowedHistoryConfig(AgentHistoryConfig):
    compressor: WindowedConfig = field(default_factory=WindowedConfig)


@dataclass
class HybridHistoryConfig(AgentHistoryConfig):
    compressor: HybridConfig = field(default_factory=HybridConfig)


@dataclass
class TaskSegmentedHistoryConfig(AgentHistoryConfig):
    compressor: TaskSegmentedConfig = field(default_factory=TaskSegmentedConfig)


@dataclass
class ToolRoundsHistoryConfig(AgentHistoryConfig):
    compressor: ToolRoundsConfig = field(default_factory=ToolRoundsConfig)


@dataclass
class ChainHistoryConfig(AgentHistoryConfig):
    compressor: ChainConfig = field(default_factory=ChainConfig)


@dataclass
class SessionEndOpsConfig:
    """`+hooks@hooks.sessions=sessions`: fork and/or compact the history at every session end."""

    _target_: str = "memlab.memory.SessionEndOps"
    fork: bool = True
    compactor: Any = None  # e.g. {_target_: memlab.memory.WindowedMemoryCompressor, max_items: 6}


SCHEMAS = {
    ("memory", "trim"): TrimCleanupConfig,
    ("memory", "summarize"): SummarizeCleanupConfig,
    ("memory", "delete"): DeleteCleanupConfig,
    ("memory", "filter"): FilterCleanupConfig,
    ("agent_memory", "chat"): ChatHistoryConfig,
    ("agent_memory", "windowed"): WindowedHistoryConfig,
    ("agent_memory", "hybrid"): HybridHistoryConfig,
    ("agent_memory", "per_task"): TaskSegmentedHistoryConfig,
    ("agent_memory", "tool_rounds"): ToolRoundsHistoryConfig,
    ("agent_memory", "chain"): ChainHistoryConfig,
    ("hooks", "sessions"): SessionEndOpsConfig,
}
