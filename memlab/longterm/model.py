"""Typed long-term memories, their namespaces and the per-type retrieval policy.

The first design document's four types (FACT, PREFERENCE, PROCEDURE, EPISODE), the
namespace ``["agent:{namespace}", "user:{userId}", "memories"]`` and the stored value
``{content, agentId, source}``; memlab adds ``type``, ``evidence`` (the ids of the turns a
memory came from) and ``created_at`` to the value so that every memory is traceable, and
``context`` (the turn before it, which retrieval indexes with it).
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any

from memlab.dates import day_month_year
from memlab.errors import MemlabError
from memlab.messages import naive
from memlab.runtime.agent import SecurityContext

SOURCE_AUTO_EXTRACT = "auto_extract"  # channel A: extracted after each turn, not deduplicated
SOURCE_AGENT_TOOL = "agent_tool"  # channel B: memory_save, deduplicated by substring (case-folded words)
NAMESPACE_SUFFIX = "memories"
NAMESPACE_MAX_CHARS = 255  # the store's VARCHAR(255) key
# Data without timestamps runs on this clock, so nothing decays and runs stay reproducible.
EPOCH = datetime(1970, 1, 1)


class MemoryType(StrEnum):
    """What a memory is about; each type has its own weight and half-life (`TypePolicy`)."""

    FACT = "FACT"  # stable facts about the user; weighted highest
    PREFERENCE = "PREFERENCE"  # likes and wishes; a newer one may supersede an older one
    PROCEDURE = "PROCEDURE"  # how something was solved; may expire
    EPISODE = "EPISODE"  # a dated event; decays fastest

    @classmethod
    def parse(cls, value: str) -> MemoryType:
        try:
            return cls(str(value).strip().upper())
        except ValueError:
            raise ValueError(f"unknown memory type {value!r}; expected one of {', '.join(cls)}") from None


@dataclass(frozen=True)
class TypePolicy:
    """A type's retrieval weight, how fast it decays without access (half-life) and when it expires."""

    weight: float
    """Multiplies the type's relevance in stage `decay` (the document ranks the types; memlab weighs them)."""
    half_life_days: float | None = None
    """Days without access after which the score halves (None: never decays)."""
    ttl_days: float | None = None
    """Days after which a memory of the type expires (None: never)."""

    @property
    def decay_factor(self) -> float:
        """The daily `decay_factor` of ``relevance_score *= decay_factor ** days_since_access``."""
        return 1.0 if self.half_life_days is None else float(0.5 ** (1.0 / self.half_life_days))


def naive_utc(moment: datetime | None) -> datetime:
    """Timestamps as naive UTC (what every SQL dialect stores alike); None is the `EPOCH`."""
    if moment is None:
        return EPOCH
    return naive(moment)


def namespace_of(agent_namespace: str, user_id: str) -> tuple[str, str, str]:
    """``("agent:{namespace}", "user:{user_id}", "memories")``: the document's namespace, one per agent and user.

    Args:
        agent_namespace: The agent's `namespace` setting.
        user_id: The user, from the runtime's security context (never from the model).

    Returns:
        The namespace; a `MemlabError` when its key exceeds the store's 255 characters.

    >>> namespace_of("chat", "42")
    ('agent:chat', 'user:42', 'memories')
    """
    ns = (f"agent:{agent_namespace}", f"user:{user_id}", NAMESPACE_SUFFIX)
    if len(namespace_key(ns)) > NAMESPACE_MAX_CHARS:
        raise MemlabError(
            f"long-term memory namespace for agent namespace {agent_namespace!r} and user {user_id!r} is longer "
            f"than {NAMESPACE_MAX_CHARS} characters; use shorter ids"
        )
    return ns


def namespace_for(security: SecurityContext, agent_namespace: str) -> tuple[str, str, str]:
    """The namespace of whoever the runtime serves; the only way memlab derives one."""
    return namespace_of(agent_namespace, security.user_id)


@functools.lru_cache(maxsize=1 << 12)
def namespace_key(namespace: tuple[str, ...]) -> str:
    """The namespace as the JSON array the store keys on (memoized: every save and search asks, per touched row)."""
    return json.dumps(list(namespace), ensure_ascii=False, separators=(",", ":"))


@dataclass(frozen=True)
class Memory:
    """One stored memory: its value (content, agent, source, type, evidence) and its lifecycle fields."""

    id: str
    """Unique in its namespace; made from the namespace's sequence number, so runs are reproducible."""
    namespace: tuple[str, ...]
    """``("agent:{namespace}", "user:{user_id}", "memories")``: whose memory it is (`namespace_of`)."""
    content: str
    """The statement itself, as injected into the prompt."""
    type: MemoryType
    """What it is about: sets its weight, decay and expiry (`TypePolicy`)."""
    source: str
    """The channel that saved it: ``auto_extract`` or ``agent_tool`` (they deduplicate differently)."""
    agent_id: str
    """The agent that saved it (the document's ``agentId``)."""
    created_at: datetime
    """When it was said (the data's clock, naive UTC; `EPOCH` when the data has none)."""
    last_accessed_at: datetime
    """When a search last returned it: decay counts the days since."""
    evidence: tuple[str, ...] = ()
    """Ids of the turns it came from, so retrieval can be scored against a question's evidence."""
    access_count: int = 0
    """How often searches returned it; cleanup spares a memory retrieved often enough."""
    relevance_score: float = 1.0
    """The score decay starts from, stored at each access (the document's ``relevance_score``)."""
    archived: bool = False
    """Archived memories are kept in the store but never retrieved."""
    context: str = ""
    """The turn before the memory's own (often the question it answers): indexed, never shown."""
    revises: tuple[str, ...] = ()
    """Ids of older memories this one revises (`memlab.longterm.revision`), read by search just above them."""

    def indexed_text(self) -> str:
        """What the lexical index reads as the memory's own text: content and the date it was said (when the
        data has one); `context` is indexed beside it as a field of its own (`IndexSpec.context_weight`).

        Beyond the document: the neighbouring turn and the date make a memory findable by the
        question it answered and by "in May" (docs/longterm.md measures each).
        """
        date = "" if self.created_at == EPOCH else day_month_year(self.created_at)
        return " ".join(part for part in (self.content, date) if part)

    def value(self) -> dict[str, Any]:
        """The ``value_json`` of the design document, plus type, evidence and creation time."""
        return {
            "content": self.content,
            "agentId": self.agent_id,
            "source": self.source,
            "type": str(self.type),
            "evidence": list(self.evidence),
            "created_at": self.created_at.isoformat(),
            **({"context": self.context} if self.context else {}),
            **({"revises": list(self.revises)} if self.revises else {}),
        }


@dataclass(frozen=True)
class Retrieved:
    """A memory as retrieval returns it: `score` ranks it (similarity x type weight x decay, or the
    hybrid index's fused score), `similarity` is its cosine similarity to the query."""

    memory: Memory
    """The memory found."""
    score: float
    """What ranks it, in [0, 1] as the re-ranking stages leave it."""
    similarity: float
    """Its cosine similarity to the query (the dense signal alone)."""


@dataclass(frozen=True)
class MemoryDraft:
    """What extraction proposes before it is stored."""

    type: MemoryType
    content: str
    evidence: tuple[str, ...] = field(default=())
    context: str = ""
