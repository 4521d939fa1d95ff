"""A file of one format given to another format's loader says what it is and which `dataset=` reads it."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from memlab.dialogues import load_jsonl, load_locomo, load_longmemeval, load_tau_bench
from memlab.dialogues.source import PROJECT_ROOT
from memlab.errors import DatasetError

CHAT = {"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]}
LONGMEMEVAL = PROJECT_ROOT / "datasets" / "longmemeval_sample.json"
JSONL = "the file is JSONL (a JSON value on each line), not one JSON list"
LISTS = "the file is a JSON list on each line, not one JSON list"


def _read(load: Callable[..., Any], path: Path) -> str:
    with pytest.raises(DatasetError) as e:
        list(load(path))
    return str(e.value)


def _lines(path: Path, *rows: object) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


@pytest.mark.parametrize("load", [load_locomo, load_tau_bench, load_longmemeval])
def test_jsonl_given_to_a_loader_of_one_list_names_dataset_jsonl(tmp_path: Path, load: Callable[..., Any]) -> None:
    """The whole-file parse said "not valid JSON: Extra data" on line 2, of a file whose every line is valid JSON."""
    path = _lines(tmp_path / "chats.jsonl", CHAT, CHAT)
    assert _read(load, path) == (
        f"{path}: {JSONL}; its lines are OpenAI JSONL records (they have 'messages'): read this file with "
        f"dataset=jsonl dataset.path={path}"
    )


def test_records_of_a_loader_one_per_line_are_named(tmp_path: Path, locomo_sample) -> None:
    own = _lines(tmp_path / "own.jsonl", locomo_sample("c1"), locomo_sample("c2"))
    assert _read(load_locomo, own) == f"{own}: {JSONL}; write its LoCoMo records as one list: [{{...}}, {{...}}]"
    trajectories = _lines(tmp_path / "tau.jsonl", {"task_id": 0, "traj": []}, {"task_id": 1, "traj": []})
    assert _read(load_locomo, trajectories) == (
        f"{trajectories}: {JSONL}; its lines are tau-bench trajectories records (they have 'task_id', 'traj'): "
        "write them as one JSON list, and read it with dataset=tau_bench"
    )
    lists = _lines(tmp_path / "lists.jsonl", [1], [2])
    assert _read(load_tau_bench, lists) == (
        f"{lists}: {LISTS}; dataset=jsonl reads OpenAI-format conversations, one JSON object per line, "
        '{"messages": [...]}'
    )


@pytest.mark.parametrize("load", [load_locomo, load_tau_bench, load_longmemeval])
def test_a_json_list_on_each_line_is_named_by_what_its_lists_hold(tmp_path: Path, load: Callable[..., Any]) -> None:
    """LongMemEval's loader said "[1]: not valid JSON (parse error: trailing garbage)" of a list of records on each
    line, and "[0]: missing key "question_id"" of messages; the others sent a list of records to dataset=jsonl."""
    own = load is load_longmemeval
    questions = json.loads(LONGMEMEVAL.read_text(encoding="utf-8"))
    records = _lines(tmp_path / "records.jsonl", questions[:1], questions[1:2])
    assert _read(load, records) == f"{records}: {LISTS}; " + (
        "write its LongMemEval records as one list: [{...}, {...}]"
        if own
        else "its lines are lists of LongMemEval records (they have 'question_id', 'haystack_sessions'): write them "
        "as one JSON list, and read it with dataset=longmemeval"
    )
    messages = _lines(tmp_path / "messages.jsonl", CHAT["messages"], CHAT["messages"])
    assert _read(load, messages) == (
        f"{messages}: {LISTS}; dataset=jsonl reads OpenAI-format conversations, one JSON object per line, "
        '{"messages": [...]}'
    )
    chats = _lines(tmp_path / "chats.jsonl", [CHAT], [CHAT])
    assert _read(load, chats) == (
        f"{chats}: {LISTS}; its lines are lists of OpenAI JSONL records (they have 'messages'): write each on a line "
        "of its own, not in a list, and read it with dataset=jsonl"
    )


def test_longmemeval_lists_on_lines_longer_than_its_first_read_are_named(tmp_path: Path) -> None:
    """A line past the first megabyte the loader reads to tell the format: yajl said "trailing garbage" at [2]."""
    questions = json.loads(LONGMEMEVAL.read_text(encoding="utf-8"))
    long = [{**q, "note": "x" * 600_000} for q in questions[:3]]
    path = _lines(tmp_path / "long.jsonl", long[:2], long[2:])
    assert _read(load_longmemeval, path) == (
        f"{path}: the list of 2 questions is followed by more JSON (a JSON list on each line?); write the questions "
        "as one list: [{...}, {...}]"
    )


def test_a_list_on_each_line_is_said_to_be_no_conversation(tmp_path: Path) -> None:
    """A common log shape: each line the message list alone. With two lines or more it was "Extra data"."""
    path = _lines(tmp_path / "lists.jsonl", CHAT["messages"], CHAT["messages"])
    assert _read(load_jsonl, path) == (
        f'{path}: each line is a JSON list; expected a JSON object per line, {{"messages": [...]}}'
    )


@pytest.mark.parametrize("load", [load_locomo, load_tau_bench, load_jsonl])
def test_a_longmemeval_file_names_dataset_longmemeval(load: Callable[..., Any]) -> None:
    """It said `[0]: missing key "sample_id"` (LongMemEval's keys were not among those that name a format)."""
    assert _read(load, LONGMEMEVAL).startswith(
        f"{LONGMEMEVAL}: [0] is a LongMemEval record (it has 'question_id', 'haystack_sessions'), not "
    )
    assert _read(load, LONGMEMEVAL).endswith(f"; read this file with dataset=longmemeval dataset.path={LONGMEMEVAL}")


def test_a_locomo_file_given_to_longmemeval_names_dataset_locomo(tmp_path: Path, locomo_sample) -> None:
    path = tmp_path / "locomo.json"
    path.write_text(json.dumps([locomo_sample()]), encoding="utf-8")
    assert _read(load_longmemeval, path) == (
        f"{path}: [0] is a LoCoMo record (it has 'sample_id', 'conversation', 'qa'), not LongMemEval; read this "
        f"file with dataset=locomo dataset.path={path}"
    )
