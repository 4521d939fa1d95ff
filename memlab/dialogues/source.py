"""Reading dataset files: where a relative path is found, and errors that name the file and the place.

Every loader reads through here, so every bad input ends the same way: one `DatasetError` whose
message is ``<file>[:line[:column]]: <JSON path>: <what was expected>``.

>>> reader = JsonReader("data.json")
>>> reader.get({"turns": "hi"}, "turns", list, "[0]")
Traceback (most recent call last):
...
memlab.errors.DatasetError: data.json: [0].turns: expected a list, got a string
"""

from __future__ import annotations

import codecs
import json
import os
import re
import stat
from collections.abc import Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

from memlab.errors import DatasetError, MissingFileError
from memlab.messages import naive

# The checkout (or editable install) that holds `datasets/` next to the `memlab` package.
PROJECT_ROOT = Path(__file__).resolve().parents[2]

_KIND_NAMES: dict[type, str] = {
    str: "a string",
    int: "an integer",
    float: "a number",
    bool: "true or false",
    list: "a list",
    dict: "an object",
    type(None): "null",
}


# A dataset's times end before this: the replay's clock runs on from the last one (30 s a call, decay, sessions).
LATEST_TIME = datetime(9000, 1, 1)

# Keys that mark a record of each loader's format, so that a file given to the wrong `dataset=` names the right one.
RECORD_KEYS = {
    "locomo": ("sample_id", "conversation", "qa"),
    "tau_bench": ("task_id", "traj"),
    "longmemeval": ("question_id", "haystack_sessions"),
    "jsonl": ("messages", "sessions"),
}
FORMAT_NAMES = {
    "locomo": "LoCoMo",
    "tau_bench": "tau-bench trajectories",
    "longmemeval": "LongMemEval",
    "jsonl": "OpenAI JSONL",
}


def check_format(source: str | os.PathLike[str], record: Any, dataset: str, where: str = "[0]") -> None:
    """Refuse a record of another loader's format, naming the `dataset=` that reads it.

    A tau-bench file given to `dataset=locomo` would otherwise fail on its first record's missing key
    (``[0]: missing key "sample_id"``); a record with none of any format's keys is left to the loader.
    """
    if not isinstance(record, dict) or any(k in record for k in RECORD_KEYS[dataset]):
        return
    other = other_format(record, dataset)
    if other is not None:
        name, found = other
        raise DatasetError(
            f"{source}: {where} is a {FORMAT_NAMES[name]} record (it has {', '.join(map(repr, found))}), "
            f"not {FORMAT_NAMES[dataset]}; read this file with dataset={name} dataset.path={source}"
        )


def other_format(record: Any, dataset: str) -> tuple[str, list[str]] | None:
    """The first format but `dataset` (a `RECORD_KEYS` name) whose keys `record` has, with those keys; None if
    it is no object or has none of them.

    >>> other_format({"sample_id": "c1", "conversation": {}}, "jsonl")
    ('locomo', ['sample_id', 'conversation'])
    """
    if not isinstance(record, dict):
        return None
    for name, keys in RECORD_KEYS.items():
        found = [k for k in keys if k in record]
        if name != dataset and found:
            return name, found
    return None


def resolve_path(path: str | os.PathLike[str], *, hint: str | None = None) -> Path:
    """An existing file: `path` itself if absolute, else under the current directory, else the project root.

    A missing file raises `MissingFileError` listing every place looked at, plus `hint` (where to get it); a
    folder, or a path that is no regular file (``/dev/null``, a named pipe), a `DatasetError` saying what it is.

    Args:
        path: The file as the config or caller names it.
        hint: Where to get the file, said when it is missing.
    """
    given = Path(path).expanduser()
    candidates = [given] if given.is_absolute() else list(dict.fromkeys([Path.cwd() / given, PROJECT_ROOT / given]))
    for candidate in candidates:
        if candidate.is_file():
            return candidate
    looked = ", ".join(str(c) for c in candidates)
    if any(c.is_dir() for c in candidates):
        raise DatasetError(f"{path}: is a folder, expected a dataset file (looked in {looked})")
    for candidate in candidates:
        if candidate.exists():  # neither a file nor a folder: /dev/null, a named pipe (`<(zcat f)`), a socket
            kind = _special_kind(candidate)
            raise DatasetError(f"{path}: is {kind}, not a regular file; expected a dataset file (looked in {looked})")
    message = f"{path}: no such file (looked in {looked})"
    raise MissingFileError(f"{message}; {hint}" if hint else message)


_SPECIAL_KINDS = (
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISFIFO, "a named pipe"),
    (stat.S_ISSOCK, "a socket"),
)


def _special_kind(path: Path) -> str:
    """What a path that exists but is neither a regular file nor a folder is, for the error that refuses it."""
    mode = path.stat().st_mode
    return next((name for test, name in _SPECIAL_KINDS if test(mode)), "a special file")


def too_big(path: Path) -> DatasetError:
    """The one-line error for a file that does not fit in this machine's memory (instead of a MemoryError traceback)."""
    size = path.stat().st_size / 2**20
    return DatasetError(f"{path}: {size:,.0f} MB does not fit in this machine's memory; split it into smaller files")


# What a compressed file begins with, and the tool that wrote it.
_COMPRESSED = {
    b"\x1f\x8b": "gzip",
    b"PK\x03\x04": "zip",
    b"\xfd7zXZ\x00": "xz",
    b"BZh": "bzip2",
    b"\x28\xb5\x2f\xfd": "zstd",
}


def check_not_compressed(path: str | os.PathLike[str], head: bytes) -> None:
    """Refuse a file that `head`, its first bytes, shows to be compressed, naming how (it was "byte 0x8b is not
    UTF-8" at 1:2, or "expected a JSON list")."""
    for magic, tool in _COMPRESSED.items():
        if head.startswith(magic):
            raise DatasetError(
                f"{path}: the file is {tool}-compressed (it begins with the bytes {magic.hex(' ')}); expected JSON "
                "text: decompress it first"
            )


def read_text(path: Path) -> str:
    """The file decoded as UTF-8 (a leading BOM is allowed); a bad byte is reported by line and column (in
    characters, as an editor counts them), a compressed file as compressed."""
    try:
        data = path.read_bytes()
        check_not_compressed(path, data)
        return data.decode("utf-8-sig")
    except MemoryError:
        raise too_big(path) from None
    except UnicodeDecodeError as e:
        bom = len(codecs.BOM_UTF8) if data.startswith(codecs.BOM_UTF8) else 0
        at = bom + e.start  # utf-8-sig counts from after the BOM
        start = max(data.rfind(b"\n", 0, at) + 1, bom)
        line, column = data.count(b"\n", 0, at) + 1, len(data[start:at].decode("utf-8")) + 1
        raise DatasetError(
            f"{path}:{line}:{column}: byte 0x{data[at]:02x} is not UTF-8; expected a UTF-8 text file"
        ) from None


def parse_json(text: str, source: str, first_line: int = 1) -> Any:
    """`json.loads`, with an error naming `source`, the line and column, and whether the text ends early.

    `first_line` is the line of `source` on which `text` starts (for one line of a JSONL file).
    """
    if not text.strip():
        raise DatasetError(f"{source}: the file is empty; expected JSON")
    where = source if "\n" in text.strip() else f"{source}:{first_line}"  # one line: name it
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        if e.msg.startswith("Unterminated string"):  # json finds no closing quote before the end
            why = "the JSON ends early, in the string that begins here (is the file truncated?)"
        elif e.pos >= len(text.rstrip()):
            why = "the JSON ends early (is the file truncated?)"
        else:  # "Invalid control character at": the place is the line and column
            why = f"not valid JSON: {e.msg.removesuffix(' at')}"
        raise DatasetError(f"{source}:{first_line - 1 + e.lineno}:{e.colno}: {why}") from None
    except RecursionError:
        raise DatasetError(f"{where}: the JSON is nested too deeply to read") from None
    except ValueError as e:  # valid JSON Python refuses: an integer of more than 4,300 digits
        raise DatasetError(f"{where}: cannot read the JSON: {e}") from None
    if _SURROGATE_ESCAPE.search(text):
        lone = lone_surrogate(data, "")
        if lone is not None:
            raise DatasetError(f"{where}: {lone or 'the top level'}: {HALF_PAIR}")
    return data


# A JSON escape of a UTF-16 surrogate: legal JSON, but alone (not as a pair) it is no character.
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
HALF_PAIR = (
    "holds an escape of half a surrogate pair (\\udXXX), which is no character and cannot be written out; "
    "expected UTF-8 text"
)


def lone_surrogate(value: Any, where: str) -> str | None:
    """The JSON path of the first string (or key) of `value` that holds a lone surrogate, None if none does.

    >>> lone_surrogate(json.loads('{"a": ["ok", "ab\\\\ud800"]}'), "[0]")
    '[0].a[1]'
    """
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return where
        return None
    items: Any = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, item in items:
        found = lone_surrogate(key, where) if isinstance(key, str) else None
        if found is None:
            found = lone_surrogate(item, child(where, key))
        if found is not None:
            return found
    return None


def read_json(path: Path, dataset: str) -> Any:
    """A whole JSON file (one too big to parse in memory here is refused in one line, naming it); JSONL, which
    `dataset` (a `RECORD_KEYS` name) does not read, is named so."""
    try:
        text = read_text(path)
        try:
            return parse_json(text, str(path))
        except DatasetError:
            first = first_of_lines(text)
            if first is None:
                raise
            raise lines_given(path, first, dataset) from None
    except MemoryError:
        raise too_big(path) from None


def first_of_lines(text: str) -> Any:
    """The first line's value if `text` is JSON Lines (its first non-blank line one JSON value, more lines after
    it), else None. Only asked once the whole text failed to parse: its error would be "Extra data" on line 2.

    >>> first_of_lines('{"messages": []}\\n{"messages": []}\\n')
    {'messages': []}
    >>> first_of_lines('[\\n  {"sample_id": "c1"}\\n]') is None
    True
    """
    lines = [line for line in text.split("\n") if line.strip()]
    if len(lines) < 2:
        return None
    try:
        return json.loads(lines[0])
    except (ValueError, RecursionError):
        return None


def lines_given(source: str | os.PathLike[str], first: Any, dataset: str) -> DatasetError:
    """The error for JSON Lines given to `dataset`, a loader of one JSON list, saying which loader reads its lines.

    `first` is the first line's value; a list on each line (records split into several lists, or a conversation's
    messages alone) is named so and its first item taken as the record (dataset=jsonl refuses a list per line too).
    """
    lists = isinstance(first, list)
    record = (first[0] if first else None) if lists else first
    shape = "a JSON list on each line" if lists else "JSONL (a JSON value on each line)"
    what = f"{source}: the file is {shape}, not one JSON list"
    if isinstance(record, dict) and any(k in record for k in RECORD_KEYS[dataset]):
        return DatasetError(f"{what}; write its {FORMAT_NAMES[dataset]} records as one list: [{{...}}, {{...}}]")
    other = other_format(record, dataset)
    if other is None:
        per_line = ' JSON object per line, {"messages": [...]}' if lists else " per line"
        return DatasetError(f"{what}; dataset=jsonl reads OpenAI-format conversations, one{per_line}")
    name, found = other
    kind = f"lists of {FORMAT_NAMES[name]} records" if lists else f"{FORMAT_NAMES[name]} records"
    said = f"{what}; its lines are {kind} (they have {', '.join(map(repr, found))})"
    if name != "jsonl":
        return DatasetError(f"{said}: write them as one JSON list, and read it with dataset={name}")
    if lists:
        return DatasetError(f"{said}: write each on a line of its own, not in a list, and read it with dataset=jsonl")
    return DatasetError(f"{said}: read this file with dataset=jsonl dataset.path={source}")


def read_records(path: str | os.PathLike[str], *, hint: str, dataset: str, empty: str) -> tuple[JsonReader, list[Any]]:
    """A dataset file whose top level is a list of records: found, parsed, not empty and in `dataset`'s format.

    Args:
        path: The file (`resolve_path`: relative to the working directory, else the project root).
        hint: Where the file comes from, for the error when it is missing.
        dataset: The loader's format (a key of `RECORD_KEYS`): a record of another format names its loader.
        empty: The error's text for an empty list ("no samples ... expected ...").

    Returns:
        A reader naming the file in its errors, and the records.
    """
    file = resolve_path(path, hint=hint)
    reader = JsonReader(file)
    records = reader.expect(read_json(file, dataset), list, "")
    if not records:
        raise reader.error("", empty)
    check_format(file, records[0], dataset)
    return reader, records


def child(where: str, key: str | int) -> str:
    """The JSON path of `key` under `where`: ``[3].conversation`` + ``session_2`` -> ``[3].conversation.session_2``."""
    if isinstance(key, int):
        return f"{where}[{key}]"
    return f"{where}.{key}" if where else key


def kind_name(kind: type | tuple[type, ...]) -> str:
    kinds = kind if isinstance(kind, tuple) else (kind,)
    return " or ".join(_KIND_NAMES.get(k, k.__name__) for k in kinds)


def _is(value: Any, kind: type | tuple[type, ...]) -> bool:
    kinds = kind if isinstance(kind, tuple) else (kind,)
    if isinstance(value, bool) and bool not in kinds:  # JSON true is not a number
        return False
    if float in kinds and isinstance(value, int):
        return True
    return isinstance(value, kinds)


class JsonReader:
    """Typed access to parsed JSON that fails with the file and the JSON path of the bad value."""

    def __init__(self, source: str | os.PathLike[str]) -> None:
        self.source = str(source)

    def error(self, where: str, what: str) -> DatasetError:
        return DatasetError(f"{self.source}: {where}: {what}" if where else f"{self.source}: {what}")

    def time(self, moment: datetime, written: str, where: str) -> datetime:
        """`moment` as naive UTC (`naive`), or a `DatasetError` at `where` if the replay's clock cannot run on from it.

        Args:
            moment: The time `written` was read as, with or without an offset.
            written: The time as the file gives it, for the message.
            where: Its JSON path.
        """
        try:
            moment = naive(moment)
        except OverflowError:  # 9999-12-31T23:59:00-05:00 is in year 10000 in UTC
            raise self.error(where, f"{written!r} is out of range once converted to UTC") from None
        if moment >= LATEST_TIME:
            raise self.error(
                where,
                f"{written!r} is too late: the replay's clock runs on from a dataset's times, "
                f"which must be before {LATEST_TIME.year}",
            )
        return moment

    def expect(self, value: Any, kind: type | tuple[type, ...], where: str) -> Any:
        """`value` itself if it has JSON type `kind`, else a `DatasetError` at `where`."""
        if not _is(value, kind):
            raise self.error(where, f"expected {kind_name(kind)}, got {kind_name(type(value))}")
        return value

    def get(self, obj: Mapping[str, Any], key: str, kind: type | tuple[type, ...], where: str) -> Any:
        """The required field `key` of the object at `where`, checked to be of `kind`."""
        if key not in obj:
            raise self.error(where, f'missing key "{key}" (expected {kind_name(kind)})')
        return self.expect(obj[key], kind, child(where, key))

    def optional(self, obj: Mapping[str, Any], key: str, kind: type | tuple[type, ...], where: str) -> Any:
        """Like `get`, but an absent key or null is None."""
        value = obj.get(key)
        return None if value is None else self.expect(value, kind, child(where, key))
