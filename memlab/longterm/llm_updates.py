"""Save-time update links decided by the run's LLM (`longterm.revision.kind=llm`), in the spirit of mem0's
ADD / UPDATE / DELETE / NONE: the model reads a new memory beside the older memories of its speaker that
are closest to it and says, for each, whether the new one changes it (UPDATE), contradicts it (DELETE) or
leaves it be (NONE); the new memory is always added. UPDATE and DELETE become revision links (the older
memory is kept, as history: memlab archives nothing on a model's word), which the `revisions` stage reads
at search time, as it reads the rule-made links (`memlab.longterm.revision`).

A reply that is not the JSON asked for links nothing (and is counted by the caller); a failed model call
raises `LLMError` to the caller, as extraction does. Ids in the prompt are small integers, not memory ids:
a model copies short ids more reliably (mem0 maps its UUIDs to integers for the same reason).
"""

from __future__ import annotations

import json
from collections.abc import Sequence

import numpy as np

from memlab.embed.base import Embedder
from memlab.llm.base import TASK_EXTRACT_MEMORIES, ChatModel
from memlab.longterm.model import Memory
from memlab.longterm.revision import speaker

CANDIDATES = 5  # the older memories of the speaker shown to the model, closest first
MAX_TOKENS = 200
EVENTS = ("UPDATE", "DELETE", "NONE")
LINKING = frozenset({"UPDATE", "DELETE"})

PROMPT = """You keep a person's long-term memory. A new memory was just saved. For each existing memory \
below, decide what the new memory does to it:
- UPDATE: the new memory states a newer value of the same thing (a new city, job, partner, pet, plan ...);
- DELETE: the new memory says the existing one is no longer true, without a new value;
- NONE: the new memory adds to it, repeats it, or is about something else (an event that happened again is NONE).
Answer with JSON only: {"memory": [{"id": "<id>", "event": "UPDATE" | "DELETE" | "NONE"}, ...]}, one entry per \
existing memory."""


def candidates(new: Memory, older: Sequence[Memory], embedder: Embedder, n: int = CANDIDATES) -> list[Memory]:
    """The `n` older memories of `new`'s speaker, from other turns, closest to it (cosine), closest first."""
    who, turns = speaker(new.content), set(new.evidence)
    same = [
        m
        for m in older
        if m.id != new.id and m.created_at <= new.created_at and speaker(m.content) == who
        if not turns & set(m.evidence)
    ]
    if not same:
        return []
    sims = embedder.embed([m.content for m in same]) @ embedder.embed([new.content])[0]
    return [same[i] for i in np.argsort(-sims, kind="stable")[:n]]


def messages(new: Memory, shown: Sequence[Memory]) -> list[dict[str, str]]:
    """The chat request: the instructions, then the new memory and the numbered existing ones as JSON."""
    existing = [{"id": str(i), "text": m.content} for i, m in enumerate(shown)]
    return [
        {"role": "system", "content": PROMPT},
        {"role": "user", "content": json.dumps({"new_memory": new.content, "existing": existing}, ensure_ascii=False)},
    ]


def parse(text: str, shown: Sequence[Memory]) -> tuple[str, ...] | None:
    """The ids of the shown memories the reply marks UPDATE or DELETE; None if the reply is not the JSON asked for."""
    start, end = text.find("{"), text.rfind("}")
    try:
        entries = json.loads(text[start : end + 1])["memory"] if start >= 0 else None
    except (ValueError, KeyError, TypeError):
        return None
    if not isinstance(entries, list):
        return None
    linked = []
    for e in entries:
        if not isinstance(e, dict) or str(e.get("event", "")).upper() not in EVENTS:
            return None
        at = str(e.get("id", ""))
        if str(e["event"]).upper() in LINKING and at.isdigit() and int(at) < len(shown):
            linked.append(shown[int(at)].id)
    return tuple(dict.fromkeys(linked))


def llm_revised_ids(
    llm: ChatModel, new: Memory, older: Sequence[Memory], embedder: Embedder, n: int = CANDIDATES
) -> tuple[str, ...] | None:
    """The ids of the memories in `older` that the model says `new` updates or deletes (None: unreadable reply)."""
    shown = candidates(new, older, embedder, n)
    if not shown:
        return ()
    reply = llm.complete(messages(new, shown), task=TASK_EXTRACT_MEMORIES, max_tokens=MAX_TOKENS)
    return parse(reply.text, shown)
