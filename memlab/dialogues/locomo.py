"""LoCoMo (`locomo10.json` format): long two-person conversations with QA probes and annotations.

Maharana et al., "Evaluating Very Long-Term Conversational Memory of LLM Agents" (ACL 2024),
https://github.com/snap-research/locomo (``data/locomo10.json``). Each sample becomes one `Dialogue`:

- one `Session` per ``conversation.session_N`` in numeric order (N may skip; a key is read as
  written, ``session_01`` is session 1, and two keys of one number are an error), started at
  ``session_N_date_time``; turn i of a session is stamped ``start + i * TURN_INTERVAL`` (the
  source has no per-turn times, so a fixed step keeps the clock deterministic);
- ``speaker_a`` plays the ``user`` and ``speaker_b`` the ``assistant`` (LoCoMo is two people, not a
  user and an agent; the simulator calls the model at every assistant turn, i.e. at speaker_b's);
  `name` and `speaker` keep the person's name, `id` the ``dia_id``;
- a shared image becomes text: its BLIP caption is appended as ``[shares an image: <caption>]``;
- each ``qa`` item becomes a `Probe` whose category is the name of LoCoMo's integer
  (`LOCOMO_CATEGORIES`: 1 multi-hop, 2 temporal, 3 open-domain, 4 single-hop, 5 adversarial; the
  integer stays in metadata as ``locomo_category``). Its gold answer is ``answer``; an adversarial
  question mostly has none: its ``adversarial_answer`` is the trap a model should not give, kept
  in metadata only, never as gold (LoCoMo's evaluation scores it by whether the answer says the
  information is not available; mem0's skips it).

The category numbering is checked against the data (tests/dialogues/test_locomo.py): 97% of
category 1 questions cite several turns (multi-hop), 78% of category 2 ask "When" (temporal),
category 3 asks what someone would "likely" do (open-domain), 96% of category 4 cite one turn.

Two optional QA keys that LoCoMo lacks mark how a question's evidence relates to other turns (memlab's
own sets in ``datasets/updates/`` use them; `memlab.metrics.longterm` reads them): ``superseded``, the older
turns the evidence revises, and ``decoys``, later turns that sound like a revision but revise nothing. Each
is a list of the conversation's ``dia_id``s, kept in the probe's metadata under the same name; an id that
names no turn is an error, since these keys are written for memlab and not inherited untidy.

Real evidence lists are untidy: several ids in one string (``"D8:6; D9:17"``), ids that do not
exist (``"D"``, ``"D:11:26"``, or a turn the conversation lacks). Valid ids are kept (``"D1: 3"`` and
``"D1:03"`` as ``D1:3`` when that is the only turn they can name), the rest counted in `Dialogue.metadata` (see
`LocomoMetadata` for every key) and named in the probe's (`DROPPED_EVIDENCE_KEY`, which a run reports), and loading
never fails on them.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, TypedDict

from memlab import dates
from memlab.dialogues.model import (
    DECOYS_KEY,
    DROPPED_EVIDENCE_KEY,
    SUPERSEDED_KEY,
    UNIQUE_DIALOGUE_IDS,
    Dialogue,
    Probe,
    Session,
)
from memlab.dialogues.source import JsonReader, child, read_records
from memlab.errors import DatasetError
from memlab.messages import Message

LOCOMO_SOURCE = "get locomo10.json from https://github.com/snap-research/locomo (data/locomo10.json)"
# The source has session times only; turns within a session are this far apart.
TURN_INTERVAL = timedelta(seconds=30)
IMAGE_NOTE = "[shares an image: {caption}]"
LOCOMO_CATEGORIES = {"1": "multi-hop", "2": "temporal", "3": "open-domain", "4": "single-hop", "5": "adversarial"}
ADVERSARIAL = LOCOMO_CATEGORIES["5"]
RELATED_TURN_KEYS = (SUPERSEDED_KEY, DECOYS_KEY)  # optional QA keys, kept in `Probe.metadata` (module docstring)

_SESSION_KEY = re.compile(r"session_(\d+)")
_OBSERVATION_KEY = re.compile(r"(session_\d+)_observation")
_SUMMARY_KEY = re.compile(r"(session_\d+)_summary")
_EVENTS_KEY = re.compile(r"events_(session_\d+)")
_EVIDENCE_SEPARATORS = re.compile(r"[;,\s]+")
_TURN_ID = re.compile(r"D([0-9]+):([0-9]+)")  # a dia_id: D<session>:<turn>
# Tried in order after commas are dropped and spaces collapsed ("1:56 pm on 8 May, 2023").
_DATE_FORMATS = (
    "%I:%M %p on %d %B %Y",
    "%I:%M %p on %d %b %Y",
    "%I:%M %p on %B %d %Y",
    "%I:%M %p %d %B %Y",
    "%H:%M on %d %B %Y",
    "%d %B %Y",
    "%B %d %Y",
)


@dataclass(frozen=True)
class Observation:
    """A fact LoCoMo's annotators drew from one or more turns of a session (``observation``).

    Args:
        session_id: The session it belongs to.
        speaker: Whom it is about.
        text: The fact as the annotators wrote it.
        evidence: The ids of the turns it was drawn from.
    """

    session_id: str
    speaker: str
    text: str
    evidence: tuple[str, ...]


@dataclass(frozen=True)
class LifeEvent:
    """An event of a speaker's life the session covers (``event_summary``), with its date as written.

    Args:
        session_id: The session it belongs to.
        speaker: Whose life it is.
        text: The event as LoCoMo writes it.
        date: Its date as written in the source (None: none).
    """

    session_id: str
    speaker: str
    text: str
    date: str | None


class LocomoMetadata(TypedDict):
    """What a LoCoMo `Dialogue.metadata` holds besides the replayed turns."""

    speaker_a: str
    speaker_b: str
    session_summaries: dict[str, str]  # session id -> summary (the reference for summarizers)
    observations: tuple[Observation, ...]
    events: tuple[LifeEvent, ...]
    images: int  # turns whose image caption was appended to the text
    evidence_split: int  # qa evidence strings that held several ids
    evidence_dropped: int  # qa evidence ids dropped (malformed, or no such turn)
    evidence_dropped_values: tuple[str, ...]  # what was dropped, as written
    observation_evidence_split: int
    observation_evidence_dropped: int


def parse_session_time(text: str) -> datetime | None:
    """A LoCoMo session time such as ``1:56 pm on 8 May, 2023`` (an ISO 8601 offset kept); None if no format fits.

    >>> parse_session_time("1:56 pm on 8 May, 2023")
    datetime.datetime(2023, 5, 8, 13, 56)
    """
    cleaned = " ".join(text.replace(",", " ").split())
    for fmt in _DATE_FORMATS:
        try:
            return dates.parse(cleaned, fmt)
        except ValueError:
            continue
    try:
        return datetime.fromisoformat(text.strip())  # an offset is kept: the loader converts it (`JsonReader.time`)
    except ValueError:
        return None


def _unpadded(turn: str) -> str | None:
    """A ``D<session>:<turn>`` id without leading zeros (``D01:03`` -> ``D1:3``); None for any other string."""
    m = _TURN_ID.fullmatch(turn)
    return f"D{m[1].lstrip('0') or '0'}:{m[2].lstrip('0') or '0'}" if m else None


@dataclass
class _Evidence:
    """Splits and validates evidence ids against a conversation's turns, counting what it drops."""

    known: set[str]
    split: int = 0
    dropped: int = 0
    dropped_values: list[str] = field(default_factory=list)
    _by_unpadded: dict[str, str] = field(init=False)  # a turn's id without leading zeros -> the id, if one turn's

    def __post_init__(self) -> None:
        readings: dict[str, list[str]] = {}
        for turn in self.known:
            if (key := _unpadded(turn)) is not None:
                readings.setdefault(key, []).append(turn)
        self._by_unpadded = {key: turns[0] for key, turns in readings.items() if len(turns) == 1}

    def clean(self, entries: Iterable[Any]) -> tuple[tuple[str, ...], list[tuple[int, str]]]:
        """The ids kept, in order and once each, and those dropped, each with the index of the entry it was in."""
        kept: list[str] = []
        dropped: list[tuple[int, str]] = []
        for k, entry in enumerate(entries):
            if (turn := self._turn(entry)) is not None:
                kept.append(turn)
                continue
            parts = _EVIDENCE_SEPARATORS.split(entry.strip()) if isinstance(entry, str) else [entry]
            parts = self._rejoined([p for p in parts if p != ""])
            if len(parts) > 1:
                self.split += 1
            for part in parts or [entry]:
                if (turn := self._turn(part)) is not None:
                    kept.append(turn)
                else:
                    dropped.append((k, str(part)))
        self.dropped += len(dropped)
        self.dropped_values.extend(value for _, value in dropped)
        return tuple(dict.fromkeys(kept)), dropped

    def _turn(self, written: Any) -> str | None:
        """The id of the turn `written` names: itself, or the one turn whose id it is but for leading zeros
        (``D1:03`` for ``D1:3``: the only reading when no turn is ``D1:03`` and one alone reads as ``D1:3``)."""
        if not isinstance(written, str):
            return None
        if written in self.known:
            return written
        key = _unpadded(written)
        return None if key is None else self._by_unpadded.get(key)

    def _rejoined(self, parts: list[Any]) -> list[Any]:
        """``D1:`` and ``3``, split at a space after the colon (``"D1: 3"``), as the one id ``D1:3``: when that
        names a turn and neither piece does, it is the only reading."""
        joined: list[Any] = []
        for part in parts:
            before = joined[-1] if joined else None
            if (
                isinstance(before, str)
                and before.endswith(":")
                and isinstance(part, str)
                and part.isdigit()
                and self._turn(before + part) is not None
                and not {before, part} & self.known
            ):
                joined[-1] = before + part
            else:
                joined.append(part)
        return joined


def load_locomo(
    path: str | Path,
    max_dialogues: int | None = None,
    sample_ids: Sequence[str] | None = None,
    categories: Sequence[str | int] | None = None,
) -> list[Dialogue]:
    """Every sample of a `locomo10.json`-format file (or those in `sample_ids`), as `Dialogue`s.

    Parameters: the fields of `memlab.dialogues.schemas.LocomoConfig`, each documented there once.
    """
    empty = "no samples (the file is []); expected a list of LoCoMo conversations"
    reader, samples = read_records(path, hint=LOCOMO_SOURCE, dataset="locomo", empty=empty)
    wanted = None if categories is None else _wanted_categories(categories, samples)
    indexed = [(i, reader.expect(s, dict, child("", i))) for i, s in enumerate(samples)]
    present: dict[str, int] = {}  # the whole file's sample_ids (`sample_ids` picks by them), each once
    for i, sample in indexed:
        if isinstance(sample_id := sample.get("sample_id"), str) and (j := present.setdefault(sample_id, i)) != i:
            raise reader.error(
                child(child("", i), "sample_id"),
                f"{sample_id!r} is also the sample_id of [{j}]; {UNIQUE_DIALOGUE_IDS} (and dataset.sample_ids picks "
                "samples by it)",
            )
    if sample_ids is not None:
        missing = [s for s in sample_ids if s not in present]
        if missing:
            raise reader.error("", f"no sample_id {missing[0]!r}; the file has {', '.join(present)}")
        indexed = [(present[s], samples[present[s]]) for s in dict.fromkeys(sample_ids)]
    if max_dialogues is not None:
        indexed = indexed[:max_dialogues]
    dialogues = [_dialogue(reader, raw, child("", i), wanted) for i, raw in indexed]
    if wanted is not None and not any(d.probes for d in dialogues):
        given, known = (
            ", ".join(map(str, categories or [])),
            ", ".join(f"{k} {v}" for k, v in LOCOMO_CATEGORIES.items()),
        )
        raise reader.error("", f"no question is of dataset.categories [{given}] (LoCoMo's: {known})")
    return dialogues


def _wanted_categories(categories: Sequence[str | int], samples: list[Any]) -> set[str]:
    """The category names `categories` keeps, each a LoCoMo name or number, or a number the file's questions have.

    A typo would keep nothing of its own and no error said so (``[single-hop, multihop]`` kept the single-hop
    questions only), so an entry that is none of these is refused, as `dataset.question_types` refuses one.
    """
    in_file = {
        str(qa["category"])
        for s in samples
        if isinstance(s, dict) and isinstance(s.get("qa"), list)
        for qa in s["qa"]
        if isinstance(qa, dict) and type(qa.get("category")) is int
    }
    others = sorted(in_file - set(LOCOMO_CATEGORIES), key=int)
    known = ", ".join(f"{k} {v}" for k, v in LOCOMO_CATEGORIES.items())
    expected = f"LoCoMo's names or numbers ({known})" + (f", or this file's {', '.join(others)}" if others else "")
    if not categories:
        raise DatasetError(f"dataset.categories: [] keeps no question; expected {expected}, or null for all")
    wanted = {LOCOMO_CATEGORIES.get(str(c), str(c)): c for c in categories}
    for name, c in wanted.items():
        if name not in {*LOCOMO_CATEGORIES.values(), *others}:
            raise DatasetError(f"dataset.categories: unknown category {c!r}; expected {expected}")
    return set(wanted)


def _dialogue(reader: JsonReader, raw: dict[str, Any], where: str, categories: set[str] | None) -> Dialogue:
    sample_id = reader.get(raw, "sample_id", str, where)
    at = child(where, "conversation")
    conversation = reader.get(raw, "conversation", dict, where)
    speaker_a = reader.get(conversation, "speaker_a", str, at)
    speaker_b = reader.get(conversation, "speaker_b", str, at)
    if speaker_b == speaker_a:  # one name would play both roles: every turn an assistant turn
        raise reader.error(
            child(at, "speaker_b"),
            f"{speaker_b!r} is also speaker_a; expected two people (speaker_a plays the user, speaker_b the assistant)",
        )
    roles = {speaker_a: "user", speaker_b: "assistant"}
    sessions = []
    images = 0
    first_at: dict[str, str] = {}  # dia_id -> where it was first given
    for key in _session_keys(reader, conversation, at):
        session, n_images = _session(reader, conversation, key, roles, at, first_at)
        sessions.append(session)
        images += n_images
    if not any(s.messages for s in sessions):
        raise reader.error(at, "no turns; expected at least one non-empty session_N list")
    known = {m.id for s in sessions for m in s.messages if m.id is not None}
    qa_evidence, observation_evidence = _Evidence(known), _Evidence(known)
    probes = []
    for i, qa in enumerate(reader.get(raw, "qa", list, where)):
        probe = _probe(reader, qa, child(child(where, "qa"), i), f"{sample_id}:q{i}", qa_evidence)
        if categories is None or probe.category in categories:
            probes.append(probe)
    metadata: LocomoMetadata = {
        "speaker_a": speaker_a,
        "speaker_b": speaker_b,
        "session_summaries": _summaries(reader, raw, where),
        "observations": _observations(reader, raw, where, observation_evidence),
        "events": _events(reader, raw, where),
        "images": images,
        "evidence_split": qa_evidence.split,
        "evidence_dropped": qa_evidence.dropped,
        "evidence_dropped_values": tuple(qa_evidence.dropped_values),
        "observation_evidence_split": observation_evidence.split,
        "observation_evidence_dropped": observation_evidence.dropped,
    }
    return Dialogue(
        id=sample_id,
        sessions=tuple(sessions),
        probes=tuple(probes),
        user_id=sample_id,
        metadata=dict(metadata),
    )


def _session_keys(reader: JsonReader, conversation: dict[str, Any], at: str) -> list[str]:
    """The ``session_N`` keys in numeric order, each read as written (``session_01`` is session 1).

    Two keys of one number (``session_1`` beside ``session_01``) would be one session replayed twice, or
    two in no defined order: an error naming both.
    """
    by_number: dict[int, str] = {}
    for key in conversation:
        if m := _SESSION_KEY.fullmatch(key):
            n = int(m.group(1))
            if n in by_number:
                raise reader.error(
                    child(at, key), f"names session {n}, as {by_number[n]} does; expected one key per session"
                )
            by_number[n] = key
    return [by_number[n] for n in sorted(by_number)]


def _session(
    reader: JsonReader,
    conversation: dict[str, Any],
    key: str,
    roles: dict[str, str],
    at: str,
    first_at: dict[str, str],
) -> tuple[Session, int]:
    """One ``session_N`` list, its turns' dia_ids added to `first_at` (a dia_id given twice is an error); its images."""
    turns = reader.get(conversation, key, list, at)
    date_key = f"{key}_date_time"
    written = reader.get(conversation, date_key, str, at)
    started_at = parse_session_time(written)
    if started_at is None:
        raise reader.error(
            child(at, date_key), f"cannot read the date {written!r}; expected e.g. '1:56 pm on 8 May, 2023'"
        )
    started_at = reader.time(started_at, written, child(at, date_key))  # times of one file compare
    messages = []
    images = 0
    for i, turn in enumerate(turns):
        where = child(child(at, key), i)
        reader.expect(turn, dict, where)
        speaker = reader.get(turn, "speaker", str, where)
        if speaker not in roles:
            raise reader.error(
                child(where, "speaker"), f"{speaker!r} is neither speaker_a nor speaker_b ({', '.join(roles)})"
            )
        text = reader.get(turn, "text", str, where)
        caption = reader.optional(turn, "blip_caption", str, where)
        if caption:
            text = f"{text} {IMAGE_NOTE.format(caption=caption)}" if text else IMAGE_NOTE.format(caption=caption)
            images += 1
        dia_id = reader.get(turn, "dia_id", str, where)
        if dia_id in first_at:  # evidence naming it would match two turns
            raise reader.error(
                child(where, "dia_id"),
                f"{dia_id!r} is also the dia_id of {first_at[dia_id]}; a conversation's dia_ids are unique "
                "(evidence names turns by dia_id)",
            )
        first_at[dia_id] = where
        messages.append(
            Message(
                role=roles[speaker],
                content=text,
                name=speaker,
                id=dia_id,
                speaker=speaker,
                timestamp=started_at + i * TURN_INTERVAL,
            )
        )
    return Session(id=key, messages=tuple(messages), started_at=started_at), images


def _probe(reader: JsonReader, qa: Any, where: str, probe_id: str, evidence: _Evidence) -> Probe:
    reader.expect(qa, dict, where)
    number = str(reader.get(qa, "category", int, where))
    answer = reader.optional(qa, "answer", (str, int, float), where)
    adversarial = reader.optional(qa, "adversarial_answer", (str, int, float), where)
    metadata: dict[str, Any] = {"locomo_category": number}
    if adversarial is not None:
        metadata["adversarial_answer"] = str(adversarial)
    for key in RELATED_TURN_KEYS:
        if (ids := reader.optional(qa, key, list, where)) is not None:
            metadata[key] = _turn_ids(reader, ids, child(where, key), evidence.known)
    kept, dropped = evidence.clean(reader.get(qa, "evidence", list, where))
    if dropped:  # the run says how many, and where (`memlab.dialogues.model.dropped_evidence`)
        metadata[DROPPED_EVIDENCE_KEY] = tuple((child(child(where, "evidence"), k), v) for k, v in dropped)
    return Probe(
        id=probe_id,
        question=reader.get(qa, "question", str, where),
        answer=None if answer is None else str(answer),
        evidence=kept,
        category=LOCOMO_CATEGORIES.get(number, number),
        metadata=metadata,
    )


def _turn_ids(reader: JsonReader, ids: list[Any], where: str, known: set[str]) -> tuple[str, ...]:
    for i, turn in enumerate(ids):
        if not isinstance(turn, str) or turn not in known:
            raise reader.error(child(where, i), f"{turn!r} is not a dia_id of this conversation; expected e.g. 'D1:3'")
    return tuple(ids)


def _annotation(reader: JsonReader, raw: dict[str, Any], key: str, where: str) -> dict[str, Any]:
    return reader.optional(raw, key, dict, where) or {}


def _summaries(reader: JsonReader, raw: dict[str, Any], where: str) -> dict[str, str]:
    at = child(where, "session_summary")
    found = {}
    for key, text in _annotation(reader, raw, "session_summary", where).items():
        if m := _SUMMARY_KEY.fullmatch(key):
            found[m.group(1)] = reader.expect(text, str, child(at, key))
    return dict(sorted(found.items(), key=lambda kv: int(kv[0].split("_")[1])))


def _observations(reader: JsonReader, raw: dict[str, Any], where: str, evidence: _Evidence) -> tuple[Observation, ...]:
    at = child(where, "observation")
    found = []
    for key, by_speaker in _annotation(reader, raw, "observation", where).items():
        if not (m := _OBSERVATION_KEY.fullmatch(key)):
            continue
        for speaker, facts in reader.expect(by_speaker, dict, child(at, key)).items():
            for i, fact in enumerate(reader.expect(facts, list, child(child(at, key), speaker))):
                fact_at = child(child(child(at, key), speaker), i)
                reader.expect(fact, list, fact_at)
                if not fact:
                    raise reader.error(fact_at, "empty; expected [text, evidence]")
                text = reader.expect(fact[0], str, child(fact_at, 0))
                cited = fact[1] if len(fact) > 1 else []
                ids, _ = evidence.clean(cited if isinstance(cited, list) else [cited])
                found.append(Observation(m.group(1), speaker, text, ids))
    return tuple(sorted(found, key=lambda o: int(o.session_id.split("_")[1])))


def _events(reader: JsonReader, raw: dict[str, Any], where: str) -> tuple[LifeEvent, ...]:
    at = child(where, "event_summary")
    found = []
    for key, entry in _annotation(reader, raw, "event_summary", where).items():
        if not (m := _EVENTS_KEY.fullmatch(key)):
            continue
        reader.expect(entry, dict, child(at, key))
        date = reader.optional(entry, "date", str, child(at, key))
        for speaker, texts in entry.items():
            if speaker == "date":
                continue
            at_speaker = child(child(at, key), speaker)
            for i, text in enumerate(reader.expect(texts, list, at_speaker)):
                found.append(LifeEvent(m.group(1), speaker, reader.expect(text, str, child(at_speaker, i)), date))
    return tuple(sorted(found, key=lambda e: int(e.session_id.split("_")[1])))
