"""The JSONL loader: the shipped sample, multi-session lines, relative paths, and every malformed line."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from datetime import datetime
from pathlib import Path

import pytest

from memlab.dialogues import load_jsonl
from memlab.dialogues.source import PROJECT_ROOT
from memlab.errors import DatasetError

SAMPLE = PROJECT_ROOT / "datasets" / "sample.jsonl"


def lines(path: Path, *rows: object) -> Path:
    path.write_text("\n".join(r if isinstance(r, str) else json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    return path


def test_shipped_sample() -> None:
    dialogues = load_jsonl(SAMPLE)
    raw = [json.loads(line) for line in SAMPLE.read_text(encoding="utf-8").splitlines() if line.strip()]
    assert len(dialogues) == len(raw)
    for r, d in zip(raw, dialogues, strict=True):
        has_system = r["messages"][0]["role"] == "system"
        assert len(d) == len(r["messages"]) - has_system
        assert d.system_prompt == (r["messages"][0]["content"] if has_system else None)
    first = list(dialogues[0].messages())
    assert first[0].id == "L1:1"  # index 0 was the system prompt
    assert any(m.tool_calls for m in first) and any(m.role == "tool" for m in first)


def test_sessions_ids_and_times(tmp_path: Path) -> None:
    row = {
        "id": "chat-7",
        "user_id": "u-42",
        "sessions": [
            {"id": "monday", "started_at": "2024-05-06T09:00:00", "messages": [{"role": "user", "content": "hi"}]},
            {
                "messages": [
                    {"role": "user", "content": "back", "id": "m-1", "timestamp": "2024-05-08T10:00:00"},
                    {"role": "assistant", "content": "welcome back"},
                ]
            },
        ],
    }
    [d] = load_jsonl(lines(tmp_path / "c.jsonl", "", row, "   "))
    assert (d.id, d.user_id) == ("chat-7", "u-42")
    assert [s.id for s in d.sessions] == ["monday", "S2"]
    assert d.sessions[0].started_at == datetime(2024, 5, 6, 9)
    assert [m.id for m in d.messages()] == ["L2:0", "m-1", "L2:2"]
    assert d.sessions[1].messages[0].timestamp == datetime(2024, 5, 8, 10)


def test_a_line_separator_inside_a_string_does_not_end_the_line(tmp_path: Path) -> None:
    """JSON strings may hold U+2028, U+0085 and U+001C raw (``ensure_ascii=False`` writes them): "\\n" ends a line."""
    text = "a\u2028b\u0085c\x1cd"
    path = tmp_path / "c.jsonl"
    path.write_text(json.dumps({"messages": [{"role": "user", "content": text}]}, ensure_ascii=False) + "\n")
    [d] = load_jsonl(path)
    assert [m.text for m in d.messages()] == [text]


def test_times_with_and_without_an_offset_are_read_as_utc(tmp_path: Path) -> None:
    """One file may mix them (naive times are UTC): each is naive UTC, so the replay's clock can compare them."""
    row = {
        "sessions": [
            {"started_at": "2024-05-06T09:00:00Z", "messages": [{"role": "user", "content": "hi"}]},
            {"started_at": "2024-05-07T09:00:00", "messages": [{"role": "user", "content": "back"}]},
        ],
        "probes": [{"question": "hi?", "asked_at": "2024-05-07T12:00:00+05:00"}],
    }
    [d] = load_jsonl(lines(tmp_path / "c.jsonl", row))
    assert [s.started_at for s in d.sessions] == [datetime(2024, 5, 6, 9), datetime(2024, 5, 7, 9)]
    assert d.probes[0].asked_at == datetime(2024, 5, 7, 7)


@pytest.mark.parametrize(
    ("written", "why"),
    [
        ("9999-12-31T23:00:00-05:00", "is out of range once converted to UTC"),
        ("0001-01-01T00:00:00+05:00", "is out of range once converted to UTC"),
        ("9999-12-31T23:59:59", "is too late: the replay's clock runs on from a dataset's times, which must be before"),
    ],
)
def test_a_time_the_replay_cannot_run_on_from_is_named(tmp_path: Path, written: str, why: str) -> None:
    """The replay's clock and the stores compute after a dataset's last time: one that leaves no room is refused."""
    row = {
        "messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo", "timestamp": written}]
    }
    path = lines(tmp_path / "c.jsonl", row)
    with pytest.raises(DatasetError) as e:
        load_jsonl(path)
    assert str(e.value).startswith(f"{path}:1: messages[1].timestamp: {written!r} {why}")


def test_a_message_id_given_twice_in_a_conversation_is_named(tmp_path: Path) -> None:
    """Evidence names messages by id: with two messages of one id, recall would credit either."""
    said = [{"role": "user", "id": "m", "content": "I am a nurse."}, {"role": "assistant", "content": "Noted."}]
    row = {"sessions": [{"messages": said}, {"messages": [{"role": "user", "id": "m", "content": "I moved."}]}]}
    path = lines(tmp_path / "c.jsonl", row)
    with pytest.raises(DatasetError) as e:
        load_jsonl(path)
    assert str(e.value) == (
        f"{path}:1: sessions[1].messages[0].id: 'm' is also the id of sessions[0].messages[0]; a conversation's "
        "message ids are unique (evidence names messages by id)"
    )


UNIQUE = "dialogue ids are unique: each names its own history in the store"


@pytest.mark.parametrize(
    ("first", "second", "message"),
    [
        ({"id": "same"}, {"id": "same"}, f"6: id: 'same' is also the id of line 3; {UNIQUE}"),
        ({}, {"id": "line-3"}, f"6: id: 'line-3' is also the default id of line 3; {UNIQUE}"),
        (
            {"id": "line-6"},
            {},
            f"6: its default id 'line-6' is the id given on line 3; give line 6 an id of its own or line 3 another; "
            f"{UNIQUE}",
        ),
    ],
)
def test_a_dialogue_id_given_twice_names_both_lines(
    tmp_path: Path, first: dict[str, str], second: dict[str, str], message: str
) -> None:
    """The file's line numbers, blank lines counted (the run's generic check said "dialogues 2 and 4")."""
    hi = {"messages": [{"role": "user", "content": "hi"}]}
    path = lines(tmp_path / "c.jsonl", {**hi, "id": "a"}, "", {**hi, **first}, {**hi, "id": "b"}, "", {**hi, **second})
    with pytest.raises(DatasetError) as e:
        load_jsonl(path)
    assert str(e.value) == f"{path}:{message}"


@pytest.mark.parametrize(("text", "kind"), [(5, "an integer"), (None, "null"), ({"value": "hi"}, "an object")])
def test_a_content_part_whose_text_is_no_string_is_named(tmp_path: Path, text: object, kind: str) -> None:
    """The text parts are joined into the message's text: one that is no string ended in a TypeError traceback."""
    path = lines(tmp_path / "c.jsonl", {"messages": [{"role": "user", "content": [{"type": "text", "text": text}]}]})
    with pytest.raises(DatasetError) as e:
        load_jsonl(path)
    assert str(e.value) == f"{path}:1: messages[0].content[0].text: expected a string, got {kind}"


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (["hello", "world"], "messages[0].content[0]: expected an object, got a string"),
        ([["a"]], "messages[0].content[0]: expected an object, got a list"),
        ([{"type": "text", "text": "a"}, 7], "messages[0].content[1]: expected an object, got an integer"),
        ([], "messages[0].content: an empty list; expected a string or a non-empty list of content parts"),
    ],
)
def test_content_parts_that_are_no_objects_are_named(tmp_path: Path, content: list[object], message: str) -> None:
    """Only object parts carry text: the others were dropped unseen and the message loaded as "" (OpenAI's API
    refuses them, and an empty list)."""
    path = lines(tmp_path / "c.jsonl", {"messages": [{"role": "user", "content": content}]})
    with pytest.raises(DatasetError) as e:
        load_jsonl(path)
    assert str(e.value) == f"{path}:1: {message}"


def test_text_parts_are_joined_and_other_parts_dropped(tmp_path: Path) -> None:
    parts = [
        {"type": "text", "text": "look "},
        {"type": "image_url", "image_url": {"url": "x"}},
        {"type": "text", "text": "here"},
    ]
    [d] = load_jsonl(lines(tmp_path / "c.jsonl", {"messages": [{"role": "user", "content": parts}]}))
    assert [m.text for m in d.messages()] == ["look here"]


def test_memlab_run_names_a_content_part_whose_text_is_no_string(
    tmp_path: Path, memlab_run_err: Callable[..., tuple[int, str]]
) -> None:
    path = lines(tmp_path / "c.jsonl", {"messages": [{"role": "user", "content": [{"type": "text", "text": 5}]}]})
    status, err = memlab_run_err("dataset=jsonl", f"dataset.path={path}", f"output_dir={tmp_path / 'run'}")
    assert (status, err) == (
        2,
        f"memlab: error: {path}:1: messages[0].content[0].text: expected a string, got an integer\n",
    )
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize(
    ("said", "message"),
    [
        (
            [{"role": "user", "content": "a", "id": "L1:1"}, {"role": "assistant", "content": "b."}],
            "messages[1]: its default id 'L1:1' is taken by messages[0]'s given id; give messages[1] an id of its "
            "own or messages[0] another",
        ),
        (
            [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b.", "id": "L1:0"}],
            "messages[1].id: 'L1:0' is also the default id of messages[0]; give messages[1] another id or "
            "messages[0] one of its own",
        ),
    ],
)
def test_an_id_that_is_another_message_s_default_says_so(tmp_path: Path, said: list[object], message: str) -> None:
    """A default id ``L<line>:<index>`` may equal a given one: the error said a message without an id had it."""
    path = lines(tmp_path / "c.jsonl", {"messages": said})
    with pytest.raises(DatasetError) as e:
        load_jsonl(path)
    assert str(e.value) == (
        f"{path}:1: {message}; a conversation's message ids are unique (evidence names messages by id)"
    )


def test_a_call_id_given_twice_in_one_message_is_named_there(tmp_path: Path) -> None:
    """Two calls of one id, then a result each: the second result found no call pending, and the error said so
    ("'c1' answers no tool call ... (pending: none is pending)") instead of naming the duplicate."""
    call = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    said = [
        {"role": "user", "content": "q"},
        {"role": "assistant", "content": None, "tool_calls": [call, {**call, "function": {"name": "g"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "1"},
        {"role": "tool", "tool_call_id": "c1", "content": "2"},
    ]
    path = lines(tmp_path / "c.jsonl", {"messages": said})
    with pytest.raises(DatasetError) as e:
        load_jsonl(path)
    assert str(e.value) == (
        f"{path}:1: messages[1].tool_calls[1].id: 'c1' is also the id of tool_calls[0], so a result cannot say which "
        "of the two calls it answers (messages[3] answers 'c1' again); one message's calls have distinct ids"
    )


def test_max_dialogues(tmp_path: Path) -> None:
    row = {"messages": [{"role": "user", "content": "hi"}]}
    assert [d.id for d in load_jsonl(lines(tmp_path / "c.jsonl", row, row, row), max_dialogues=2)] == [
        "line-1",
        "line-2",
    ]


def test_relative_path_from_any_directory(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert len(load_jsonl("datasets/sample.jsonl")) == len(load_jsonl(SAMPLE))  # found under the project root
    (tmp_path / "datasets").mkdir()
    lines(tmp_path / "datasets" / "sample.jsonl", {"id": "mine", "messages": [{"role": "user", "content": "x"}]})
    assert [d.id for d in load_jsonl("datasets/sample.jsonl")] == ["mine"]  # the current directory comes first


GOOD = {"messages": [{"role": "user", "content": "hi"}]}


@pytest.mark.parametrize(
    ("row", "message"),
    [
        ({"msgs": []}, r':2: missing key "messages" \(expected a list\)$'),
        ({"messages": {"role": "user"}}, r":2: messages: expected a list, got an object$"),
        (
            {"messages": [{"role": "bot", "content": "x"}]},
            r":2: messages\[0\]\.role: unknown role 'bot'; expected one of",
        ),
        ({"messages": ["hi"]}, r":2: messages\[0\]: expected an object, got a string$"),
        ({"messages": []}, r":2: messages: no messages besides a system prompt; expected a conversation$"),
        ({"messages": [{"role": "system", "content": "s"}]}, r":2: messages: no messages besides a system prompt"),
        ({"messages": [{"role": "user", "content": "a"}], "id": 3}, r":2: id: expected a string, got an integer$"),
        ([1, 2], r":2: expected an object, got a list$"),
        ('{"messages": [{"role": "user", "content": "hi"}', r":2:48: the JSON ends early \(is the file truncated\?\)$"),
        ('{"messages": [}', r":2:15: not valid JSON: Expecting value$"),
        # json's message ends "at" (its place follows): the line and column say where
        ('{"messages": [{"role": "user", "content": "a\tb"}]}', r":2:45: not valid JSON: Invalid control character$"),
        ("not json", r":2:1: not valid JSON: Expecting value$"),
        (
            {"messages": [{"role": "user", "content": "a", "timestamp": "yesterday"}]},
            r":2: messages\[0\]\.timestamp: cannot read 'yesterday'; expected ISO 8601",
        ),
        (
            {"messages": [{"role": "user", "content": "a"}, {"role": "tool", "tool_call_id": "x", "content": "{}"}]},
            r":2: messages\[1\]\.tool_call_id: 'x' answers no tool call",
        ),
        ({"sessions": [{"messages": "x"}]}, r":2: sessions\[0\]\.messages: expected a list, got a string$"),
    ],
)
def test_broken_line_names_file_line_and_key(tmp_path: Path, row, message) -> None:
    path = lines(tmp_path / "bad.jsonl", GOOD, row, GOOD)
    with pytest.raises(DatasetError, match=message) as e:
        load_jsonl(path)
    assert str(e.value).startswith(f"{path}:2")


NOT_JSONL = ", not JSONL (one conversation per line); "
ONE_PER_LINE = 'write each conversation as one JSON object on a line of its own: {"messages": [...]}'


@pytest.mark.parametrize(
    ("document", "message"),
    [
        ([GOOD, GOOD], f"one JSON list over 18 lines{NOT_JSONL}{ONE_PER_LINE}"),
        (GOOD, f"one JSON object over 8 lines{NOT_JSONL}{ONE_PER_LINE}"),
        (
            {"sample_id": "conv-1", "conversation": {}, "qa": []},
            f"one JSON object over 5 lines{NOT_JSONL}it is a LoCoMo record (it has 'sample_id', 'conversation', "
            "'qa'), and dataset=locomo reads a JSON list of them",
        ),
    ],
)
def test_a_pretty_printed_document_is_said_to_be_no_jsonl(tmp_path: Path, document: object, message: str) -> None:
    """Read line by line, its first line ("[" or "{") was reported as JSON that ends early (a truncated file?)."""
    path = tmp_path / "pretty.jsonl"
    path.write_text(json.dumps(document, indent=2), encoding="utf-8")
    with pytest.raises(DatasetError) as e:
        load_jsonl(path)
    assert str(e.value) == f"{path}: the file is {message}"


def test_non_utf8_byte_names_line_and_column(tmp_path: Path) -> None:
    """The column counts characters, as an editor does: it counted bytes (each CJK character three)."""
    path = tmp_path / "bad.jsonl"
    before = '{"messages": [{"role": "user", "content": "東京の caf'
    path.write_bytes(json.dumps(GOOD).encode() + b"\n" + before.encode() + b'\xe9"}]}\n')
    column = len(before) + 1
    with pytest.raises(
        DatasetError, match=rf"bad\.jsonl:2:{column}: byte 0xe9 is not UTF-8; expected a UTF-8 text file$"
    ):
        load_jsonl(path)


def test_empty_file(tmp_path: Path) -> None:
    with pytest.raises(DatasetError, match=r"empty\.jsonl: no conversations; expected one JSON object per line$"):
        load_jsonl(lines(tmp_path / "empty.jsonl", ""))


def test_missing_file_and_folder(tmp_path: Path) -> None:
    with pytest.raises(DatasetError, match=rf"nope\.jsonl: no such file \(looked in {tmp_path}/nope\.jsonl\)$"):
        load_jsonl(tmp_path / "nope.jsonl")
    with pytest.raises(DatasetError, match=r"is a folder, expected a dataset file"):
        load_jsonl(tmp_path)


def test_a_path_that_is_no_regular_file_says_what_it_is(
    tmp_path: Path, memlab_run_err: Callable[..., tuple[int, str]]
) -> None:
    """/dev/null and a named pipe (a shell's ``<(zcat f)``) exist: they were reported as "no such file"."""
    with pytest.raises(DatasetError) as e:
        load_jsonl("/dev/null")
    assert str(e.value) == (
        "/dev/null: is a character device, not a regular file; expected a dataset file (looked in /dev/null)"
    )
    pipe = tmp_path / "pipe.jsonl"
    os.mkfifo(pipe)
    with pytest.raises(DatasetError) as e:
        load_jsonl(pipe)  # refused before it is opened: opening a pipe no one writes would wait for ever
    assert str(e.value) == f"{pipe}: is a named pipe, not a regular file; expected a dataset file (looked in {pipe})"
    status, err = memlab_run_err("dataset=locomo", "dataset.path=/dev/null", f"output_dir={tmp_path / 'run'}")
    assert (status, err) == (
        2,
        "memlab: error: /dev/null: is a character device, not a regular file; expected a dataset file "
        "(looked in /dev/null)\n",
    )
    assert not (tmp_path / "run").exists()
