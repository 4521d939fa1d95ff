"""The one place memlab imports litellm: lazily (it takes seconds) and offline (its bundled price map).

Below both `memlab.tokens` (litellm's tokenizers) and `memlab.llm` (its completion calls), so
neither imports the other to reach it.
"""

from __future__ import annotations

import functools
import os
from types import ModuleType


@functools.cache
def import_litellm() -> ModuleType:
    """Import litellm without network access (it otherwise fetches a price map) and only when used."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    os.environ.setdefault("LITELLM_TELEMETRY", "False")
    import litellm

    litellm.telemetry = False
    litellm.suppress_debug_info = True
    return litellm
