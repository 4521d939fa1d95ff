"""The Memory layer: memory strategies and the cleanup service, ChatMemory and AgentMemory, compressors, sessions."""

from memlab.memory.agent import (
    AgentMemory,
    InMemoryAgentMemory,
    MemoryCompressor,
    MemorySnapshot,
    StoreAgentMemory,
)
from memlab.memory.chat import ChatMemory, InMemoryChatMemory, StoreChatMemory, chat_history
from memlab.memory.cleanup import CleanupResult, MemoryCleanupService
from memlab.memory.composed import ChainCompressor, ToolRoundsCompressor
from memlab.memory.compressors import (
    HybridMemoryCompressor,
    TaskSegmentedCompressor,
    WindowedMemoryCompressor,
    fold_summary,
    summarized_count,
)
from memlab.memory.history import AgentMemoryHistory, agent_history
from memlab.memory.session import Agent, AgentSession, SessionEndOps
from memlab.memory.strategies import (
    DeleteStrategy,
    FilterStrategy,
    KeepRule,
    MemoryStrategy,
    SummarizeStrategy,
    TrimStrategy,
    keep_latest,
    keep_matching,
    rules_predicate,
    trim,
)

__all__ = [
    "Agent",
    "AgentMemory",
    "AgentMemoryHistory",
    "AgentSession",
    "ChainCompressor",
    "ChatMemory",
    "CleanupResult",
    "DeleteStrategy",
    "FilterStrategy",
    "HybridMemoryCompressor",
    "InMemoryAgentMemory",
    "InMemoryChatMemory",
    "KeepRule",
    "MemoryCleanupService",
    "MemoryCompressor",
    "MemorySnapshot",
    "MemoryStrategy",
    "SessionEndOps",
    "StoreAgentMemory",
    "StoreChatMemory",
    "SummarizeStrategy",
    "TaskSegmentedCompressor",
    "ToolRoundsCompressor",
    "TrimStrategy",
    "WindowedMemoryCompressor",
    "agent_history",
    "chat_history",
    "fold_summary",
    "keep_latest",
    "keep_matching",
    "rules_predicate",
    "summarized_count",
    "trim",
]
