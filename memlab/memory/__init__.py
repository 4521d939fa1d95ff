"""The Memory layer: ChatMemory, AgentMemory, compressors, memory strategies and the cleanup service."""

from dataclasses import dataclass

from memlab.memory.chat import ChatMemory, InMemoryChatMemory, in_memory_history


@dataclass
class InMemoryHistoryConfig:
    """`agent_memory=chat`: a plain in-memory ChatMemory per dialogue."""

    _target_: str = "memlab.memory.in_memory_history"
    _partial_: bool = True


SCHEMAS = {("agent_memory", "chat"): InMemoryHistoryConfig}

__all__ = ["SCHEMAS", "ChatMemory", "InMemoryChatMemory", "in_memory_history"]
