"""Peers: what LangChain, LlamaIndex and AutoGen ship, wrapped as memlab context strategies.

Each class here drives the peer's real library (the optional extra ``memlab[peers]``, imported
when the strategy is built) on memlab's messages and converts what comes back into the very
`Message` objects it was given, ids included, so every retention, recall and token metric is
measured for a peer exactly as for memlab's own strategies. Budgets are called `max_tokens`
everywhere and counted with memlab's counter (`counter`, the estimate by default) unless the
peer's own counter is chosen. Messages a peer makes (AutoGen's placeholder, LlamaIndex's summary)
come back without an id. A peer is not fixed when it splits a tool-call unit: the orphans it
leaves are counted as ``context.tool_orphans``. Each class names the distributions it drives
(`libraries`); a run that configures it records their versions in its manifest.
"""

from memlab.context.peers.autogen import AutogenBuffered, AutogenHeadTail, AutogenTokenLimited
from memlab.context.peers.base import PEERS_EXTRA, require
from memlab.context.peers.langchain import LangchainTrim
from memlab.context.peers.llamaindex import LlamaIndexBuffer, LlamaIndexSummary

__all__ = [
    "PEERS_EXTRA",
    "AutogenBuffered",
    "AutogenHeadTail",
    "AutogenTokenLimited",
    "LangchainTrim",
    "LlamaIndexBuffer",
    "LlamaIndexSummary",
    "require",
]
