"""The peer strategies for the tests that drive them, once the peers' libraries (extra memlab[peers]) import.

A test module importing from here is skipped, with the missing library named, when the extra is not
installed; `make test` installs it (the Makefile's dev stamp), so there none of these is skipped.
"""

from __future__ import annotations

from requires import require

require("langchain_core", "llama_index.core", "autogen_core")

from memlab.context.peers import (  # noqa: E402  (after the skip: the classes need the libraries)
    AutogenBuffered,
    AutogenHeadTail,
    AutogenTokenLimited,
    LangchainTrim,
    LlamaIndexBuffer,
    LlamaIndexSummary,
)

__all__ = [
    "AutogenBuffered",
    "AutogenHeadTail",
    "AutogenTokenLimited",
    "LangchainTrim",
    "LlamaIndexBuffer",
    "LlamaIndexSummary",
]
