"""The long-term service's typed settings, each knob declared once: the `longterm` schema inherits them.

`LongTermSettings` holds the first design document's per-agent keys (agent.defaults.long-term-memory,
in snake case, with its defaults); `ServiceRules` holds memlab's rules for extraction, supersession and
cleanup, which the document does not name. `memlab.longterm.LongTermConfig` is both plus the component's
own keys, so ``longterm.max_items`` is one field read by the config, the help and the service alike.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from typing import Any

from memlab import ranges
from memlab.errors import MemlabError
from memlab.llm.prompts import check_language


@dataclass
class LongTermSettings:
    """One agent's long-term memory settings (the document's keys, in snake case, with its defaults)."""

    enabled: bool = False
    """Long-term memory on (the document: off by default, on per agent)."""
    namespace: str = "default"
    """Memory namespace prefix: agent:{namespace}, user:{userId}, memories."""
    max_items: int = ranges.count(100)
    """Memories kept per user; beyond it the lowest-scoring are archived (the document: 100)."""
    auto_extract: bool = True
    """Extract memories after each round."""
    auto_load: bool = True
    """Load memories at session start."""
    load_max_items: int = ranges.count(10)
    """Memories injected (the document's retrieval K: 10)."""
    memory_tools: bool = False
    """Offer the agent memory_save / memory_search."""

    def merged(self, overrides: Mapping[str, Any]) -> LongTermSettings:
        """These settings with the non-null `overrides` applied (a per-agent entry).

        Args:
            overrides: Setting name -> value; None keeps the default, an unknown name is an error.

        Returns:
            A new `LongTermSettings`; these are unchanged.
        """
        names = {f.name for f in fields(self)}
        unknown = sorted(set(overrides) - names)
        if unknown:
            raise MemlabError(
                f"longterm.agents: unknown key(s) {', '.join(unknown)}; expected {', '.join(sorted(names))}"
            )
        return replace(self, **{k: v for k, v in overrides.items() if v is not None})


@dataclass
class ServiceRules:
    """memlab's rules for what the service extracts, deduplicates, supersedes and archives (beyond the document)."""

    language: str = "en"
    """The extraction prompt's language: en or zh."""
    dedup_auto_extract: bool = False
    """Deduplicate extracted memories as the agent's own saves are (by substring, `find_duplicate`)."""
    archive_threshold: float = ranges.ranged(0.05, ge=0)
    """Cleanup archives a memory whose decayed score fell below this ..."""
    archive_min_access: int = ranges.count(3)
    """... and that was retrieved fewer times than this."""
    supersede_similarity: float | None = ranges.ranged(0.9, ge=-1, le=1)
    """A new PREFERENCE this close (cosine) to an older one supersedes (archives) it (null: never)."""

    def __post_init__(self) -> None:  # built at start: a language no prompt is written in fails before the replay
        check_language(self.language, "longterm.language")
