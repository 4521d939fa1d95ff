"""The libraries as memlab entries: long-term memories (`longterm=`) and stored-history summarizers (`memory=`,
`agent_memory=`), measured like memlab's own."""

from memlab.peers.component import Collector, LongTermPeer, PeerHit, PeerSettings
from memlab.peers.langmem_memory import LangMemMemory
from memlab.peers.llamaindex_memory import LlamaIndexMemory
from memlab.peers.mem0_memory import Mem0Memory
from memlab.peers.summaries import HistorySummarizer, LangMemSummaryMemory, LlamaIndexSummaryMemory

__all__ = [
    "Collector",
    "HistorySummarizer",
    "LangMemMemory",
    "LangMemSummaryMemory",
    "LlamaIndexMemory",
    "LlamaIndexSummaryMemory",
    "LongTermPeer",
    "Mem0Memory",
    "PeerHit",
    "PeerSettings",
]
