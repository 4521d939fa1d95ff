"""OpenAI-format JSONL: one conversation per line, for users' own logs.

A line is ``{"messages": [...]}`` (one session), or ``{"sessions": [{"messages": [...]}, ...]}``
for a conversation over several sittings; optional keys are ``"id"`` and ``"user_id"`` on the
line, ``"id"`` and ``"started_at"`` (ISO 8601) on a session, and ``"id"`` and ``"timestamp"``
(ISO 8601) on a message. A leading system message becomes the dialogue's system prompt.
Message ids default to ``L<line>:<index>`` (the index over the line's messages); blank lines are skipped.

A line may carry the questions to ask after the conversation, ``"probes": [...]``, each an object with
``question`` (required), ``answer``, ``evidence`` (ids of the messages that hold the answer),
``category``, ``superseded`` (ids of older statements the evidence replaces: ``longterm.newer_first``),
``id`` and ``asked_at`` (ISO 8601). Evidence and superseded ids must name messages of the same line,
so recall and retention are measured on a team's own logs as on LoCoMo.

Every problem is reported as ``<file>:<line>: <path>: <what was expected>``.
"""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Any, NamedTuple

from memlab.dialogues.model import SUPERSEDED_KEY, UNIQUE_DIALOGUE_IDS, Dialogue, Probe, Session
from memlab.dialogues.openai_format import check_tool_results, parse_message
from memlab.dialogues.source import (
    FORMAT_NAMES,
    JsonReader,
    check_format,
    child,
    first_of_lines,
    other_format,
    parse_json,
    read_text,
    resolve_path,
)
from memlab.errors import DatasetError
from memlab.messages import Message

DEFAULT_CATEGORY = "question"  # a probe's category when the line gives none
PROBE_KEYS = ("question", "answer", "evidence", "category", "superseded", "id", "asked_at")
_LISTED_IDS = 5  # message ids an unknown-id error lists


def load_jsonl(path: str | Path, max_dialogues: int | None = None) -> list[Dialogue]:
    """Each non-blank line a `Dialogue` (the first `max_dialogues` of them, all by default).

    Parameters: the fields of `memlab.dialogues.schemas.JsonlConfig`, each documented there once.
    """
    file = resolve_path(path)
    text = read_text(file)
    if text.lstrip().startswith("["):  # one JSON list, not a line per conversation: LoCoMo's or tau-bench's?
        try:
            records = parse_json(text, str(file))
        except DatasetError:
            if isinstance(first_of_lines(text), list):  # a list on each line: of OpenAI messages, most likely
                raise JsonReader(file).error(
                    "", 'each line is a JSON list; expected a JSON object per line, {"messages": [...]}'
                ) from None
            raise
        check_format(file, records[0] if isinstance(records, list) and records else None, "jsonl")
        raise _one_document(file, text, records)
    dialogues: list[Dialogue] = []
    dialogue_at: dict[str, tuple[int, bool]] = {}  # each dialogue id, its line and whether it was given
    probe_at: dict[str, _ProbeAt] = {}  # each probe id, where it is and whether it was given: unique in the file
    # Lines end at "\n" only: `splitlines` also ends them at U+2028, U+0085..., which JSON strings may hold raw.
    for lineno, line in enumerate(text.split("\n"), start=1):
        if max_dialogues is not None and len(dialogues) >= max_dialogues:
            break
        if line.strip():
            try:
                raw = parse_json(line, str(file), first_line=lineno)
            except DatasetError:
                if not dialogues and (whole := _whole_document(text)) is not None:  # a pretty-printed object
                    raise _one_document(file, text, whole) from None
                raise
            check_format(file, raw, "jsonl", f"line {lineno}")
            reader = JsonReader(f"{file}:{lineno}")
            dialogues.append(_dialogue(reader, raw, lineno))
            _check_dialogue_id(reader, raw, dialogues[-1].id, lineno, dialogue_at)
            _check_probe_ids(reader, raw, dialogues[-1], lineno, probe_at)
    if not dialogues:
        raise JsonReader(file).error("", "no conversations; expected one JSON object per line")
    return dialogues


def _check_dialogue_id(
    reader: JsonReader, raw: dict[str, Any], dialogue_id: str, lineno: int, dialogue_at: dict[str, tuple[int, bool]]
) -> None:
    """Refuse a dialogue id an earlier line has, given or default (``line-<n>``), saying which; noted if new."""
    given = bool(raw.get("id"))
    if dialogue_id not in dialogue_at:
        dialogue_at[dialogue_id] = (lineno, given)
        return
    first, first_given = dialogue_at[dialogue_id]
    if not given:  # a default is its line's own, so the first was given
        raise reader.error(
            "",
            f"its default id {dialogue_id!r} is the id given on line {first}; give line {lineno} an id of its own "
            f"or line {first} another; {UNIQUE_DIALOGUE_IDS}",
        )
    whose = "the id" if first_given else "the default id"
    raise reader.error("id", f"{dialogue_id!r} is also {whose} of line {first}; {UNIQUE_DIALOGUE_IDS}")


class _ProbeAt(NamedTuple):
    """Where a probe id was first used: its line, its position in the line's ``probes``, and whether it was given."""

    lineno: int
    position: int
    given: bool


def _check_probe_ids(
    reader: JsonReader, raw: Any, dialogue: Dialogue, lineno: int, probe_at: dict[str, _ProbeAt]
) -> None:
    """Refuse a probe id another probe has, on this line or another: questions.csv, questions.jsonl and
    retrievals.* name a question by its id alone, so two probes' "q1" would be one question there. The error
    says which of the two ids is a default ``<dialogue id>:q<index>`` (a probe without an ``id`` has no key to
    blame). This line's ids are noted in `probe_at`."""
    unique = "probe ids are unique in the file (questions.csv, questions.jsonl and retrievals.* name a question by it)"
    for i, probe in enumerate(dialogue.probes):
        where, given = child("probes", i), bool(raw["probes"][i].get("id"))
        first = probe_at.get(probe.id)
        if first is None:
            probe_at[probe.id] = _ProbeAt(lineno, i, given)
            continue
        at = child(where, "id") if given else where
        named = f"{probe.id!r}" if given else f"its default id {probe.id!r}"
        if first.lineno != lineno:
            raise reader.error(at, f"{named} is also a probe id on line {first.lineno}; {unique}")
        other = child("probes", first.position)
        if not given:  # a default id is its index's, so the first one was given
            raise reader.error(
                at,
                f"{named} is taken by {other}'s given id; give {where} an id of its own or {other} another; {unique}",
            )
        if not first.given:
            raise reader.error(
                at, f"{named} is also the default id of {other}; give {where} another id or {other} one; {unique}"
            )
        raise reader.error(at, f"{named} is also the id of {other}; {unique}")


def _whole_document(text: str) -> Any:
    """The file's text parsed as one JSON document, or None if it is not one (a broken line of real JSONL)."""
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return None


def _one_document(file: Path, text: str, document: Any) -> DatasetError:
    """The error for a file that is one JSON document, a list or an object over several lines, not a line per record.

    Read line by line, a pretty-printed document's first line (``[`` or ``{``) is no record, and the error said
    "the JSON ends early (is the file truncated?)". A LoCoMo or tau-bench list is named by `check_format`
    first; a lone record of theirs is named here.
    """
    kind = "list" if isinstance(document, list) else "object"
    count = text.strip().count("\n") + 1
    what = f"{file}: the file is one JSON {kind}" + (f" over {count} lines" if count > 1 else "")
    what += ", not JSONL (one conversation per line)"
    other = other_format(document, "jsonl")
    if other is not None:
        name, found = other
        return DatasetError(
            f"{what}; it is a {FORMAT_NAMES[name]} record (it has {', '.join(map(repr, found))}), and "
            f"dataset={name} reads a JSON list of them"
        )
    return DatasetError(
        f'{what}; write each conversation as one JSON object on a line of its own: {{"messages": [...]}}'
    )


def _dialogue(reader: JsonReader, raw: Any, lineno: int) -> Dialogue:
    reader.expect(raw, dict, "")
    if "sessions" in raw:
        blocks = [
            (reader.expect(s, dict, child("sessions", i)), child("sessions", i))
            for i, s in enumerate(reader.get(raw, "sessions", list, ""))
        ]
    else:
        blocks = [(raw, "")]
    sessions: list[Session] = []
    flat: list[Message] = []
    wheres: list[str] = []
    first_at: dict[str, tuple[str, bool]] = {}  # message id -> where it was first used, and whether it was given
    for k, (block, at) in enumerate(blocks, start=1):
        messages_at = child(at, "messages")
        messages: list[Message] = []
        for i, m in enumerate(reader.get(block, "messages", list, at)):
            where = child(messages_at, i)
            reader.expect(m, dict, where)
            given = bool(reader.optional(m, "id", str, where))
            message_id = m["id"] if given else f"L{lineno}:{len(flat) + len(messages)}"
            if message_id in first_at:
                raise _id_taken(reader, message_id, where, given, *first_at[message_id])
            first_at[message_id] = (where, given)
            messages.append(
                parse_message(reader, m, where, id=message_id, timestamp=_time(reader, m, "timestamp", where))
            )
            wheres.append(where)
        flat.extend(messages)
        sessions.append(
            Session(
                id=reader.optional(block, "id", str, at) or f"S{k}",
                messages=tuple(messages),
                started_at=_time(reader, block, "started_at", at),
            )
        )
    system_prompt = None
    if flat and flat[0].role == "system":
        system_prompt = flat[0].text
        first = sessions[0]
        sessions[0] = Session(first.id, first.messages[1:], first.started_at)
    if not any(s.messages for s in sessions):
        raise reader.error(
            "sessions" if "sessions" in raw else "messages",
            "no messages besides a system prompt; expected a conversation",
        )
    check_tool_results(reader, flat, wheres)
    dialogue_id = reader.optional(raw, "id", str, "") or f"line-{lineno}"
    ids = [m.id for s in sessions for m in s.messages if m.id is not None]
    probes = [
        _probe(reader, p, child("probes", i), f"{dialogue_id}:q{i}", ids)
        for i, p in enumerate(reader.optional(raw, "probes", list, "") or [])
    ]
    return Dialogue(
        id=dialogue_id,
        sessions=tuple(sessions),
        probes=tuple(probes),
        system_prompt=system_prompt,
        user_id=reader.optional(raw, "user_id", str, "") or "user",
    )


def _id_taken(
    reader: JsonReader, message_id: str, where: str, given: bool, first: str, first_given: bool
) -> DatasetError:
    """The error for a message id used twice in a conversation, saying which of the two is a default ``L<line>:<i>``.

    A default colliding with a given id is refused too (evidence naming it would match either message), but
    the message then has no ``id`` key of its own, so the error says whose id it is and what to change.
    """
    unique = "a conversation's message ids are unique (evidence names messages by id)"
    if not given:
        return reader.error(
            where,
            f"its default id {message_id!r} is taken by {first}'s given id; give {where} an id of its own or "
            f"{first} another; {unique}",
        )
    if not first_given:
        return reader.error(
            child(where, "id"),
            f"{message_id!r} is also the default id of {first}; give {where} another id or {first} one of its "
            f"own; {unique}",
        )
    return reader.error(child(where, "id"), f"{message_id!r} is also the id of {first}; {unique}")


def _probe(reader: JsonReader, raw: Any, where: str, default_id: str, ids: list[str]) -> Probe:
    """One entry of a line's ``probes``: its keys checked, its ids names of the line's messages."""
    reader.expect(raw, dict, where)
    unknown = sorted(set(raw) - set(PROBE_KEYS))
    if unknown:
        raise reader.error(child(where, unknown[0]), f"unknown key; a probe has {', '.join(PROBE_KEYS)}")
    evidence = _message_ids(reader, raw, "evidence", where, ids)
    superseded = _message_ids(reader, raw, SUPERSEDED_KEY, where, ids)
    for i, old in enumerate(superseded):
        if old in evidence:
            raise reader.error(
                child(child(where, SUPERSEDED_KEY), i),
                f"{old!r} is also evidence; superseded names the older statements the evidence replaces",
            )
    return Probe(
        id=reader.optional(raw, "id", str, where) or default_id,
        question=reader.get(raw, "question", str, where),
        answer=reader.optional(raw, "answer", str, where),
        evidence=evidence,
        category=reader.optional(raw, "category", str, where) or DEFAULT_CATEGORY,
        metadata={SUPERSEDED_KEY: superseded} if superseded else {},
        asked_at=_time(reader, raw, "asked_at", where),
    )


def _message_ids(reader: JsonReader, raw: dict[str, Any], key: str, where: str, ids: list[str]) -> tuple[str, ...]:
    """The list at `key` (absent: empty), each entry the id of one of the conversation's messages."""
    at = child(where, key)
    found = reader.optional(raw, key, list, where) or []
    known = set(ids)
    for i, value in enumerate(found):
        reader.expect(value, str, child(at, i))
        if value not in known:
            listed = ", ".join(ids[:_LISTED_IDS]) + (f", ... ({len(ids)} in all)" if len(ids) > _LISTED_IDS else "")
            raise reader.error(child(at, i), f"no message {value!r} in this conversation; its message ids: {listed}")
    return tuple(dict.fromkeys(found))


def _time(reader: JsonReader, obj: dict[str, Any], key: str, where: str) -> datetime | None:
    written = reader.optional(obj, key, str, where)
    if written is None:
        return None
    try:
        moment = datetime.fromisoformat(written)
    except ValueError:
        raise reader.error(
            child(where, key), f"cannot read {written!r}; expected ISO 8601, e.g. 2024-05-01T09:30:00"
        ) from None
    return reader.time(moment, written, child(where, key))  # an offset is converted: times of one file compare
