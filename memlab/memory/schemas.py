"""Structured configs of the `memory` and `agent_memory` groups (validated by Hydra at start).

A `memory=<name>` entry is a MemoryCleanupService (`CleanupConfig`) whose `strategy` node comes
from a defaults entry (``- /schema/memory_strategy/trim@strategy``); an `agent_memory=<name>`
entry is an AgentMemory factory (`AgentHistoryConfig`) whose `compressor` node comes from
``- /schema/memory_compressor/<name>@compressor``. Each nested node is typed by its own schema.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from omegaconf import MISSING

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
class TrimStrategyConfig:
    """TRIM on the stored history: the Context layer's algorithm, written back (design document)."""

    _target_: str = "memlab.memory.TrimStrategy"
    keep_first: int = ranges.count(DEFAULT_KEEP_FIRST)
    """Messages kept from the start of the stored history."""
    keep_last: int = ranges.count(DEFAULT_KEEP_LAST)
    """Newest stored messages kept."""


@dataclass
class SummarizeStrategyConfig:
    """SUMMARIZE on the stored history: a persistent-memory summary plus the newest `keep_last`."""

    _target_: str = "memlab.memory.SummarizeStrategy"
    llm: Any = "${llm}"
    """The model that writes the summary (null: the history stays unchanged)."""
    threshold: int = ranges.ranged(DEFAULT_SUMMARY_THRESHOLD, ge=1)
    """Summarize once the stored history has more messages than this."""
    keep_last: int = ranges.count(DEFAULT_SUMMARY_KEEP_LAST)
    """Newest messages kept verbatim after the summary."""
    language: str = "auto"
    """The summary prompt's language: auto (from the messages), en or zh."""
    max_conversation_chars: int = ranges.positive(MAX_CONVERSATION_CHARS)
    """The transcript sent for a summary is cut to this many characters."""
    max_tokens: int | None = ranges.positive(None)
    """The longest summary asked for, in tokens (null: the model's own limit)."""
    counter: str = "${tokenizer}"
    """The token counter that checks a summary is not longer than what it replaces."""


@dataclass
class DeleteStrategyConfig:
    """DELETE (design document): only the newest `keep_latest` stored messages survive."""

    _target_: str = "memlab.memory.DeleteStrategy"
    keep_latest: int = ranges.count(DEFAULT_KEEP_LATEST)
    """Newest stored messages kept (the document's example: 5)."""


@dataclass
class FilterRuleConfig:
    """Keep messages of `roles` (any if empty) containing a keyword or matching a pattern (any text if both empty)."""

    roles: list[str] = field(default_factory=list)
    """Roles the rule applies to (empty: any)."""
    keywords: list[str] = field(default_factory=list)
    """Keep a message containing any of these (with `patterns` empty too: any text)."""
    patterns: list[str] = field(default_factory=list)
    """Keep a message matching any of these regular expressions."""


def _document_filter() -> list[FilterRuleConfig]:
    """The design document's example: every user message, and assistant messages that contain 重要."""
    return [FilterRuleConfig(roles=["user"]), FilterRuleConfig(roles=["assistant"], keywords=["重要"])]


@dataclass
class FilterStrategyConfig:
    """FILTER (design document): keep the stored messages that match a rule, delete the rest."""

    _target_: str = "memlab.memory.FilterStrategy"
    rules: list[FilterRuleConfig] = field(default_factory=_document_filter)
    """A message is kept when any rule matches it."""


@dataclass
class CleanupConfig:
    """When the cleanup runs: at each session end, and every N messages or N seconds of virtual time."""

    _target_: str = "memlab.memory.MemoryCleanupService"
    on_session_end: bool = True
    """Run the strategy at every session end."""
    every_turns: int | None = ranges.ranged(None, ge=1)
    """Also run it every N stored messages (null: off)."""
    every_seconds: float | None = ranges.positive(None)
    """Also run it every N seconds of the dialogue's clock (null: off)."""
    strategy: Any = MISSING
    """The strategy node, from the entry's defaults (`/schema/memory_strategy/<name>@strategy`)."""


# --- agent_memory: a callable session_id -> History ------------------------------------------


@dataclass
class ChatHistoryConfig:
    """`agent_memory=chat`: a plain ChatMemory per dialogue in the configured store."""

    _target_: str = "memlab.memory.chat_history"
    _partial_: bool = True
    store: Any = "${store}"
    """Where the histories live (the run's store)."""
    fresh: bool = True
    """Clear what the store holds under a dialogue's id before its replay."""


@dataclass
class SummaryFoldingConfig:
    """The summary settings of a compressor that summarizes (`memlab.memory.compressors.SummaryFolding`)."""

    llm: Any = "${llm}"
    """The model that writes the summary (null: the document's counting line)."""
    language: str = "auto"
    """The summary prompt's language: auto (from the messages), en or zh."""
    max_tokens: int | None = ranges.positive(None)
    """The longest summary asked for, in tokens (null: the model's own limit)."""
    counter: str = "${tokenizer}"
    """The token counter that checks a summary is not longer than what it replaces."""


@dataclass
class WindowedConfig:
    """Strategy A: only the newest `max_items` items."""

    _target_: str = "memlab.memory.WindowedMemoryCompressor"
    max_items: int = ranges.ranged(DEFAULT_WINDOW_ITEMS, ge=1)
    """Items kept (the document's examples: 20)."""


@dataclass
class HybridConfig(SummaryFoldingConfig):
    """Strategy B: the newest `max_items` items plus a summary of the older ones."""

    _target_: str = "memlab.memory.HybridMemoryCompressor"
    max_items: int = ranges.ranged(DEFAULT_WINDOW_ITEMS, ge=1)
    """Items kept verbatim (the document's examples: 20)."""


@dataclass
class TaskSegmentedConfig(SummaryFoldingConfig):
    """Strategy C: each `boundary_role` message starts a sub-task; finished ones leave a summary."""

    _target_: str = "memlab.memory.TaskSegmentedCompressor"
    keep_tasks: int = ranges.count(1)
    """Newest sub-tasks kept whole."""
    boundary_role: str = "user"
    """A message of this role starts a new sub-task."""


@dataclass
class ToolRoundsConfig(SummaryFoldingConfig):
    """CodeAct: every message, the newest `keep_rounds` tool exchanges whole, older ones summarized."""

    _target_: str = "memlab.memory.ToolRoundsCompressor"
    keep_rounds: int = ranges.count(DEFAULT_KEEP_ROUNDS)
    """Newest tool exchanges kept whole."""


@dataclass
class ChainConfig:
    """Compressors applied in order on every write (each a node with its own `_target_`)."""

    _target_: str = "memlab.memory.ChainCompressor"
    _convert_: str = "all"
    """Plain lists, so a dataclass compressor is not turned back into a config node."""
    stages: list[Any] = field(default_factory=list)
    """The compressors, each a node with its own `_target_`, applied in order."""


@dataclass
class AgentHistoryConfig:
    """An AgentMemory per dialogue in the configured store, compressed after every write."""

    _target_: str = "memlab.memory.agent_history"
    _partial_: bool = True
    store: Any = "${store}"
    """Where the histories live (the run's store)."""
    fresh: bool = True
    """Clear what the store holds under a dialogue's id before its replay."""
    compressor: Any = MISSING
    """The compressor node, from the entry's defaults (`/schema/memory_compressor/<name>@compressor`)."""


@dataclass
class SessionEndOpsConfig:
    """`+hooks@hooks.sessions=sessions`: fork and/or compact the history at every session end."""

    _target_: str = "memlab.memory.SessionEndOps"
    fork: bool = True
    """Copy the history to `<id>@<session>` in the same store at every session end."""
    compactor: Any = None
    """A compressor run at every session end, e.g. {_target_: memlab.memory.WindowedMemoryCompressor, max_items: 6}."""


STRATEGIES: dict[str, type] = {
    "trim": TrimStrategyConfig,
    "summarize": SummarizeStrategyConfig,
    "delete": DeleteStrategyConfig,
    "filter": FilterStrategyConfig,
}
COMPRESSORS: dict[str, type] = {
    "windowed": WindowedConfig,
    "hybrid": HybridConfig,
    "per_task": TaskSegmentedConfig,
    "tool_rounds": ToolRoundsConfig,
    "chain": ChainConfig,
}
SCHEMAS: dict[tuple[str, str], type] = {
    **{("memory_strategy", name): node for name, node in STRATEGIES.items()},
    **{("memory", name): CleanupConfig for name in STRATEGIES},
    **{("memory_compressor", name): node for name, node in COMPRESSORS.items()},
    **{("agent_memory", name): AgentHistoryConfig for name in COMPRESSORS},
    ("agent_memory", "chat"): ChatHistoryConfig,
    ("hooks", "sessions"): SessionEndOpsConfig,
}
