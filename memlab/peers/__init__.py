"""Long-term memory libraries (llama-index, mem0, LangMem) as `longterm=` entries, measured like memlab's own."""

from memlab.peers.component import Collector, LongTermPeer, PeerHit
from memlab.peers.langmem_memory import LangMemMemory
from memlab.peers.llamaindex_memory import LlamaIndexMemory
from memlab.peers.mem0_memory import Mem0Memory

__all__ = ["Collector", "LangMemMemory", "LlamaIndexMemory", "LongTermPeer", "Mem0Memory", "PeerHit"]
