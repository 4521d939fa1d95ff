"""The one place memlab imports litellm: lazily, and with its price map read from the wheel."""

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
    return litellm
