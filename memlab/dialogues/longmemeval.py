"""LongMemEval (`longmemeval_s.json`, `longmemeval_m.json`, `longmemeval_oracle.json`): one question per history.

Wu et al., "LongMemEval: Benchmarking Chat Assistants on Long-Term Interactive Memory" (ICLR 2025),
https://github.com/xiaowu0162/LongMemEval. Each file is a list of 500 questions, each with its own
haystack of timestamped user-assistant sessions. Each question becomes one `Dialogue`:

- its id and user are the ``question_id`` (so no memory carries over between questions); its
  sessions are ``haystack_sessions`` with ids ``haystack_session_ids``, started at
  ``haystack_dates`` (``2023/05/20 (Sat) 02:21``) and replayed in time order (the oracle file
  lists them unsorted; the others are sorted already);
- turn i (from 1) of session S has id ``S_i``, LongMemEval's own corpus id, so the ranked turns
  compare with its retrieval logs and a turn's session is its id without the last ``_i``;
- one `Probe`: id ``question_id`` (the key of the ``questions.jsonl`` its evaluator reads), category
  ``question_type``, asked at ``question_date``; evidence: the turns marked ``has_answer``, or where a
  question has no such label, every turn of its answer sessions (``metadata["evidence_from"]``);
  ``answer_session_ids`` (those in the haystack) in ``metadata["evidence_sessions"]`` for the
  session-level metrics (`memlab.metrics.sessions`);
- a question whose id contains ``_abs`` is an abstention question (``metadata["abstention"]``): it
  refers to something the history never says, so it has no evidence, and retrieval metrics leave
  it out as LongMemEval's do; its answer explains why it cannot be answered.

The file is read one question at a time (ijson), so ``longmemeval_m.json`` (about 2.7 GB) is never
held as parsed JSON; a session that recurs in several questions' haystacks (the filler sessions do)
is held once, as the same tuple of messages (docs/datasets.md gives the memory measured).
"""

from __future__ import annotations

import codecs
import json
from collections.abc import Iterator, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from memlab import dates
from memlab.dialogues.model import EVIDENCE_SESSIONS_KEY, UNIQUE_DIALOGUE_IDS, Dialogue, Probe, Session
from memlab.dialogues.nesting import NestingGuard
from memlab.dialogues.source import (
    HALF_PAIR,
    JsonReader,
    check_format,
    check_not_compressed,
    child,
    first_of_lines,
    lines_given,
    lone_surrogate,
    resolve_path,
)
from memlab.errors import DatasetError, first_line
from memlab.messages import Message

LONGMEMEVAL_SOURCE = (
    "get longmemeval_s.json from https://huggingface.co/datasets/xiaowu0162/longmemeval "
    "(or the data link of https://github.com/xiaowu0162/LongMemEval)"
)
QUESTION_TYPES = (
    "single-session-user",
    "single-session-assistant",
    "single-session-preference",
    "multi-session",
    "knowledge-update",
    "temporal-reasoning",
)
ABSTENTION_MARK = "_abs"  # in a question id: an abstention question (LongMemEval's evaluate_qa.py test)
DATE_FORMAT = "%Y/%m/%d (%a) %H:%M"  # 2023/05/20 (Sat) 02:21
TURN_ROLES = ("user", "assistant")
_READ_CHUNK = 1 << 20


def load_longmemeval(
    path: str | Path, max_dialogues: int | None = None, question_types: Sequence[str] | None = None
) -> Iterator[Dialogue]:
    """Each question of the file as a `Dialogue` (the first `max_dialogues` kept, of `question_types` only).

    The file is found and the options checked here; the questions are read as the result is iterated.

    Parameters: the fields of `memlab.dialogues.schemas.LongMemEvalConfig`, each documented there once.
    """
    file = resolve_path(path, hint=LONGMEMEVAL_SOURCE)
    expected = f"expected some of {', '.join(QUESTION_TYPES)}"
    if question_types is not None and not question_types:  # "none", as dataset.categories=[] is for LoCoMo
        raise DatasetError(f"dataset.question_types: [] keeps no question; {expected}, or null for all")
    for kept in question_types or ():
        if kept not in QUESTION_TYPES:
            raise DatasetError(f"dataset.question_types: unknown type {kept!r}; {expected}")
    return _questions(file, max_dialogues, question_types)


def _questions(file: Path, max_dialogues: int | None, question_types: Sequence[str] | None) -> Iterator[Dialogue]:
    import ijson

    reader = JsonReader(file)
    sessions: dict[str, tuple[Message, ...]] = {}  # one tuple per distinct session, shared by the questions
    first: dict[str, int] = {}  # each question id read, and where
    count = index = 0
    with open(file, "rb") as f:
        _expect_list(f, reader)
        guard = NestingGuard(f, str(file))
        items = ijson.items(guard, "item", use_float=True, buf_size=_READ_CHUNK)
        while max_dialogues is None or count < max_dialogues:
            try:
                raw = next(items)
            except StopIteration:
                break
            except (ijson.JSONError, UnicodeDecodeError) as e:  # a lone low surrogate is a UnicodeDecodeError
                if "trailing garbage" in first_line(e):  # more after the list: lines longer than `_expect_list` reads
                    raise reader.error(
                        "",
                        f"the list of {index} questions is followed by more JSON (a JSON list on each line?); "
                        "write the questions as one list: [{...}, {...}]",
                    ) from None
                lone = _lone_surrogate_in(file, guard, index) if isinstance(e, UnicodeDecodeError) else None
                raise reader.error(lone or f"[{index}]", HALF_PAIR if lone else _json_problem(e)) from None
            if (lone := _lone_surrogate_in(file, guard, index)) is not None:  # yajl read it as "?", or fused it
                raise reader.error(lone, HALF_PAIR)
            if index == 0:
                check_format(file, raw, "longmemeval")
            dialogue = _dialogue(reader, raw, f"[{index}]", sessions)
            if (j := first.setdefault(dialogue.id, index)) != index:
                raise reader.error(
                    f"[{index}].question_id", f"{dialogue.id!r} is also the question_id of [{j}]; {UNIQUE_DIALOGUE_IDS}"
                )
            index += 1
            if question_types is not None and dialogue.probes[0].category not in question_types:
                continue
            count += 1
            yield dialogue
    if index == 0:
        raise reader.error("", "no questions; expected a list of LongMemEval questions")


def _expect_list(f: Any, reader: JsonReader) -> None:
    """Checks that the file holds a list, and leaves it at its start, after a UTF-8 BOM if it has one."""
    head = f.read(_READ_CHUNK)
    check_not_compressed(reader.source, head)
    bom = len(codecs.BOM_UTF8) if head.startswith(codecs.BOM_UTF8) else 0
    head = head[bom:].lstrip()
    f.seek(bom)
    if not head:
        raise reader.error("", "the file is empty; expected a JSON list of LongMemEval questions")
    if (first := first_of_lines(head.decode("utf-8", errors="replace"))) is not None:  # JSONL: lists or objects
        raise lines_given(reader.source, first, "longmemeval")
    if not head.startswith(b"["):
        raise reader.error("", "expected a JSON list of LongMemEval questions (the longmemeval_s.json format)")


def _lone_surrogate_in(file: Path, guard: NestingGuard, index: int) -> str | None:
    """The JSON path of the string of question `index` that holds an escape of half a surrogate pair, None if none.

    Only a question the guard marks is read again, with `json`, which keeps such an escape as it is (ijson's C
    backend reads ``\\ud800`` alone as ``?``). One it stopped in is first read to its end through the guard.
    """
    span = guard.surrogate_span(index)
    while span is not None and span[1] is None and guard.read(_READ_CHUNK):
        span = guard.surrogate_span(index)
    start, end = span or (0, None)
    if end is None:
        return None
    with open(file, "rb") as again:
        again.seek(start)
        text = again.read(end - start).decode("utf-8", errors="replace")
    try:
        return lone_surrogate(json.loads(text), f"[{index}]")
    except ValueError:  # JSON yajl reads and json does not: no verdict here
        return None


def _json_problem(error: Exception) -> str:
    if isinstance(error, UnicodeDecodeError):  # from a string's escapes, when the guard could not say where
        return f"a string is not valid Unicode ({error.reason}): an escape of half a surrogate pair (\\udXXX)?"
    first = first_line(error).removeprefix("b'")
    if "premature EOF" in first:
        return "the JSON ends early (is the file truncated?)"
    if "UTF8" in first:
        return "a byte is not UTF-8; expected a UTF-8 text file"
    return f"not valid JSON ({first})"


def parse_date(reader: JsonReader, written: str, where: str) -> datetime:
    """A LongMemEval date, ``2023/05/20 (Sat) 02:21``.

    >>> parse_date(JsonReader("x.json"), "2023/05/20 (Sat) 02:21", "[0].question_date")
    datetime.datetime(2023, 5, 20, 2, 21)
    """
    try:
        moment = dates.parse(written, DATE_FORMAT)
    except ValueError:
        raise reader.error(where, f"cannot read {written!r}; expected a date like 2023/05/20 (Sat) 02:21") from None
    return reader.time(moment, written, where)


def _dialogue(reader: JsonReader, raw: Any, at: str, known: dict[str, tuple[Message, ...]]) -> Dialogue:
    reader.expect(raw, dict, at)
    question_id = reader.get(raw, "question_id", str, at)
    question_type = reader.get(raw, "question_type", str, at)
    if question_type not in QUESTION_TYPES:
        raise reader.error(
            child(at, "question_type"), f"unknown type {question_type!r}; expected one of {', '.join(QUESTION_TYPES)}"
        )
    ids = [
        reader.expect(s, str, child(child(at, "haystack_session_ids"), i))
        for i, s in enumerate(reader.get(raw, "haystack_session_ids", list, at))
    ]
    dates = [
        parse_date(
            reader, reader.expect(d, str, child(child(at, "haystack_dates"), i)), child(child(at, "haystack_dates"), i)
        )
        for i, d in enumerate(reader.get(raw, "haystack_dates", list, at))
    ]
    bodies = reader.get(raw, "haystack_sessions", list, at)
    if not len(ids) == len(dates) == len(bodies):
        raise reader.error(
            at,
            f"haystack_session_ids, haystack_dates and haystack_sessions differ in length "
            f"({len(ids)}, {len(dates)}, {len(bodies)}); expected one id and one date per session",
        )
    built = [
        _session(reader, body, child(child(at, "haystack_sessions"), i), ids[i], known) for i, body in enumerate(bodies)
    ]
    answer_sessions = reader.get(raw, "answer_session_ids", list, at)
    for i, s in enumerate(answer_sessions):
        reader.expect(s, str, child(child(at, "answer_session_ids"), i))
    _check_repeats(reader, at, question_id, ids, built, set(answer_sessions))
    in_time_order = sorted(range(len(ids)), key=lambda i: dates[i])
    sessions = [Session(ids[i], built[i][0], dates[i]) for i in in_time_order]
    if not any(s.messages for s in sessions):  # a replay of no turns: no call, no memory, nothing measured
        raise reader.error(child(at, "haystack_sessions"), "no turns; expected at least one non-empty session")
    labelled = [turn for i in in_time_order for turn in built[i][1]]
    present = tuple(s.id for s in sessions if s.id in set(answer_sessions))
    abstention = ABSTENTION_MARK in question_id
    evidence_from = "has_answer" if labelled else "answer_sessions"
    evidence = labelled or [m.id for s in sessions if s.id in present for m in s.messages if m.id]
    answer = reader.get(raw, "answer", (str, int, float), at)
    probe = Probe(
        id=question_id,
        question=reader.get(raw, "question", str, at),
        answer=str(answer),
        evidence=() if abstention else tuple(evidence),
        category=question_type,
        metadata={
            "abstention": abstention,
            "evidence_from": None if abstention else evidence_from,
            EVIDENCE_SESSIONS_KEY: () if abstention else present,
        },
        asked_at=parse_date(reader, reader.get(raw, "question_date", str, at), child(at, "question_date")),
    )
    return Dialogue(
        id=question_id,
        sessions=tuple(sessions),
        probes=(probe,),
        user_id=question_id,
        metadata={"question_type": question_type, "answer_sessions_missing": len(set(answer_sessions) - set(present))},
    )


def _check_repeats(
    reader: JsonReader,
    at: str,
    question_id: str,
    ids: list[str],
    built: list[tuple[tuple[Message, ...], list[str]]],
    answer_sessions: set[str],
) -> None:
    """A session id given twice in one haystack is allowed only for an exact copy that holds no evidence.

    Both copies' turns get the ids ``S_1``, ``S_2``...: for a filler session repeated at another date, as
    LongMemEval-S's sampler repeats 13 (its issue #54), an id names the same words twice and no evidence, so it
    loads (refusing it would refuse the official file); with other turns, or with evidence (``has_answer`` turns,
    an answer session), one id would name two turns and evidence match either: an error naming the question and
    the id.
    """
    first: dict[str, int] = {}
    for i, session_id in enumerate(ids):
        j = first.setdefault(session_id, i)
        if j == i:
            continue
        (messages, evidence), (first_messages, first_evidence) = built[i], built[j]
        if messages != first_messages:
            why = f"with other turns: its turn ids ({session_id}_1, ...) would name two turns"
        elif evidence or first_evidence or session_id in answer_sessions:
            why = "and holds evidence, which would match the turns of both copies"
        else:
            continue
        raise reader.error(
            child(child(at, "haystack_session_ids"), i),
            f"{session_id!r} is also haystack_session_ids[{j}] of question {question_id!r}, {why}",
        )


def _session(
    reader: JsonReader, raw: Any, at: str, session_id: str, known: dict[str, tuple[Message, ...]]
) -> tuple[tuple[Message, ...], list[str]]:
    """A haystack session's messages (the tuple already held for an equal session, if any) and its has_answer ids."""
    turns = reader.expect(raw, list, at)
    messages, evidence = [], []
    for i, turn in enumerate(turns):
        where = child(at, i)
        reader.expect(turn, dict, where)
        role = reader.get(turn, "role", str, where)
        if role not in TURN_ROLES:
            raise reader.error(child(where, "role"), f"unknown role {role!r}; expected user or assistant")
        turn_id = f"{session_id}_{i + 1}"
        messages.append(Message(role=role, content=reader.get(turn, "content", str, where), id=turn_id))
        if reader.optional(turn, "has_answer", bool, where):
            evidence.append(turn_id)
    built = tuple(messages)
    held = known.setdefault(session_id, built)
    return (held if held == built else built), evidence
