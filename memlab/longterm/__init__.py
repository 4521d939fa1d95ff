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
from memlab.longterm.rerank import DEFAULT_PIPELINE, RankContext, Stage, build_pipeline, decayed_score
from memlab.longterm.retrievals import RESULT_RETRIEVAL
from memlab.longterm.revision import RevisionRule
from memlab.longterm.schemas import LongTermConfig
from memlab.longterm.service import (
    DEFAULT_TYPES,
    ExtractionWorker,
    LongTermMemoryService,
    Ranking,
    SaveResult,
)
from memlab.longterm.settings import LongTermSettings, ServiceRules
from memlab.longterm.store import MemoryStore
from memlab.longterm.tools import MEMORY_SAVE, MEMORY_SEARCH, MemoryToolProvider

__all__ = [
    "DEFAULT_PIPELINE",
    "DEFAULT_TYPES",
    "MEMORY_SAVE",
    "MEMORY_SEARCH",
    "RESULT_EVIDENCE",
    "RESULT_INJECTED_TOKENS",
    "RESULT_RETRIEVAL",
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
    "LongTermConfig",
    "LongTermMemoryComponent",
    "LongTermMemoryService",
    "LongTermSettings",
    "Memory",
    "MemoryRulePolicy",
    "MemoryStore",
    "MemoryToolProvider",
    "MemoryType",
    "RankContext",
    "Ranking",
    "Retrieved",
    "RevisionRule",
    "SaveResult",
    "ServiceRules",
    "Stage",
    "TypePolicy",
    "asks_about_past",
    "build_pipeline",
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
