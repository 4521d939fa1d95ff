"""Messages as the JSON entries a store keeps, provenance included (items use `memlab.messages.item_to_dict`).

A stored chat message keeps its source id, speaker and timestamp, so that what a replay later
reads back from SQL or Redis is the very message it appended.

>>> m = Message(role="user", content="hi", id="D1:1", speaker="Ann")
>>> message_from_entry(message_to_entry(m)) == m
True
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from memlab.messages import Message, ToolCall


def message_to_entry(m: Message) -> dict[str, Any]:
    """The provider's form of `m` (`Message.to_openai`) plus its provenance fields."""
    entry = m.to_openai()
    if m.id is not None:
        entry["id"] = m.id
    if m.speaker is not None:
        entry["speaker"] = m.speaker
    if m.timestamp is not None:
        entry["timestamp"] = m.timestamp.isoformat()
    return entry


def message_from_entry(entry: Mapping[str, Any]) -> Message:
    stamp = entry.get("timestamp")
    return Message(
        role=str(entry["role"]),
        content=entry.get("content"),
        name=entry.get("name"),
        tool_calls=tuple(ToolCall.from_openai(c) for c in entry.get("tool_calls") or ()),
        tool_call_id=entry.get("tool_call_id"),
        id=entry.get("id"),
        speaker=entry.get("speaker"),
        timestamp=datetime.fromisoformat(stamp) if stamp else None,
    )
