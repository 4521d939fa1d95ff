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
        f"{lists}: {JSONL}; dataset=jsonl reads OpenAI-format conversations, one per line"
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
