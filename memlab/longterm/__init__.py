"""Long-term memory: typed memories per agent and user, extraction, retrieval, tools, decay, injection."""

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

__all__ = [
    "DEFAULT_TYPES",
    "MEMORY_SAVE",
    "MEMORY_SEARCH",
    "RESULT_EVIDENCE",
    "RESULT_INJECTED_TOKENS",
    "RESULT_SOURCES",
    "RETRIEVE_MODES",
    "SKIP_LAYERS",
    "SOURCE_AGENT_TOOL",
    "SOURCE_AUTO_EXTRACT",
    "ExactIndex",
    "ExtractionWorker",
    "HnswIndex",
    "HybridIndex",
    "IndexSpec",
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
