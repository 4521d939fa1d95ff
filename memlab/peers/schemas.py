"""Structured configs of the peers on the long-term and Memory layers, validated at start.

`longterm=llamaindex_memory|mem0|langmem`; `memory=llamaindex_summary|langmem_summary` (a cleanup service
whose strategy node is the library's summarizer) and `agent_memory=llamaindex_summary|langmem_summary` (an
AgentMemory whose compressor node is the same summarizer).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from memlab import ranges
from memlab.memory.schemas import AgentHistoryConfig, CleanupConfig
from memlab.peers import component, llamaindex_memory, mem0_memory, summaries


@dataclass
class PeerConfig:
    """What every long-term peer takes: the run's embedder and counter, memlab's retrieval depths and moment."""

    embedder: Any = "${embedder}"
    """The embeddings the library indexes with (the run's embedder, through an adapter)."""
    counter: str = "${tokenizer}"
    """Counts the injected block's tokens (and llama-index's memory)."""
    load_max_items: int = ranges.ranged(component.LOAD_MAX_ITEMS, ge=1)
    """Memories injected (the document's retrieval K: 10, as memlab's entries)."""
    probe_k: int = ranges.ranged(component.PROBE_K, ge=1)
    """The deepest cut-off of longterm.recall@K."""
    retrieve: str = "session_start"
    """When memories are retrieved: session_start, or every_turn."""


@dataclass
class LlamaIndexMemoryConfig(PeerConfig):
    """`longterm=llamaindex_memory`: llama-index `Memory` with a `VectorMemoryBlock` (and facts)."""

    _target_: str = "memlab.peers.LlamaIndexMemory"
    llm: Any = "${llm}"
    """The model of the fact-extraction block (used only with facts: true)."""
    token_limit: int = ranges.positive(llamaindex_memory.DEFAULT_TOKEN_LIMIT)
    """`Memory`'s token_limit: the FIFO flushes to the blocks above token_limit * chat_history_token_ratio."""
    token_flush_size: int = ranges.positive(llamaindex_memory.DEFAULT_FLUSH_SIZE)
    """Tokens flushed to the blocks at a time (one vector node per flush)."""
    chat_history_token_ratio: float = ranges.ranged(llamaindex_memory.DEFAULT_HISTORY_RATIO, ge=0.01, le=1)
    """Share of token_limit the FIFO keeps (llama-index's default 0.7)."""
    facts: bool = False
    """Add a FactExtractionMemoryBlock (needs a model writing llama-index's <facts> format: llm=litellm)."""
    max_facts: int = ranges.positive(50)
    """The fact block's max_facts (llama-index's default 50)."""


@dataclass
class Mem0Config(PeerConfig):
    """`longterm=mem0`: mem0's `Memory` over an in-process Qdrant."""

    _target_: str = "memlab.peers.Mem0Memory"
    llm: Any = "${llm}"
    """The model of mem0's extraction (used only with infer: true)."""
    infer: bool = False
    """mem0 extracts memories with the model (true) or stores each turn as it is (false, offline)."""
    threshold: float = ranges.ranged(mem0_memory.DEFAULT_THRESHOLD, ge=0, le=1)
    """mem0's search threshold: memories scoring lower are not returned (mem0's default 0.1)."""


@dataclass
class LangMemConfig(PeerConfig):
    """`longterm=langmem`: LangMem's memory tools over LangGraph's InMemoryStore."""

    _target_: str = "memlab.peers.LangMemMemory"
    llm: Any = "${llm}"
    """The model of LangMem's memory store manager (used only with extract: true)."""
    extract: bool = False
    """LangMem's store manager extracts memories by tool calls (needs llm=litellm), or each turn is saved (false)."""


@dataclass
class HistorySummaryConfig:
    """What both stored-history summarizers take: the run's model and counter, the history's token budget."""

    llm: Any = "${llm}"
    """The model that writes the library's summaries (the run's, through an adapter)."""
    counter: str = "${tokenizer}"
    """The library's token counter (the run's tokenizer, over each message's text)."""
    max_tokens: int = ranges.positive(summaries.DEFAULT_MAX_TOKENS)
    """The tokens of history the library keeps (llama-index's token_limit, LangMem's max_tokens)."""


@dataclass
class LlamaIndexSummaryConfig(HistorySummaryConfig):
    """llama-index's ChatSummaryMemoryBuffer on the stored history."""

    _target_: str = "memlab.peers.LlamaIndexSummaryMemory"
    summary_tokens: int | None = ranges.positive(summaries.DEFAULT_SUMMARY_TOKENS)
    """The longest summary asked of the model (null: the model's own limit)."""


@dataclass
class LangMemSummaryConfig(HistorySummaryConfig):
    """LangMem's summarize_messages on the stored history."""

    _target_: str = "memlab.peers.LangMemSummaryMemory"
    max_tokens_before_summary: int | None = ranges.positive(None)
    """Tokens not yet summarized that start a summary (null: max_tokens, LangMem's default)."""
    max_summary_tokens: int = ranges.positive(summaries.LANGMEM_SUMMARY_TOKENS)
    """The summary's share of max_tokens, and the model's answer limit (LangMem's default 256)."""


SUMMARIZERS: dict[str, type] = {"llamaindex_summary": LlamaIndexSummaryConfig, "langmem_summary": LangMemSummaryConfig}

SCHEMAS: dict[tuple[str, str], type] = {
    **{("memory_strategy", name): node for name, node in SUMMARIZERS.items()},
    **{("memory", name): CleanupConfig for name in SUMMARIZERS},
    **{("memory_compressor", name): node for name, node in SUMMARIZERS.items()},
    **{("agent_memory", name): AgentHistoryConfig for name in SUMMARIZERS},
    ("longterm", "llamaindex_memory"): LlamaIndexMemoryConfig,
    ("longterm", "mem0"): Mem0Config,
    ("longterm", "langmem"): LangMemConfig,
}
