"""The peer experiments run unchanged on a LoCoMo conversation they were never shown (the held-out check).

The conversation is dev7's last one in the public locomo10.json format under another sample id, its two
speakers renamed everywhere: nothing in `experiment=peers_longterm` or `experiment=peers_memory` may name a
conversation, a speaker or a turn of dev7. Each sweep runs on the file given by `dataset.path` alone.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import pytest
from requires import require

require("llama_index.core", "mem0", "langmem", "langgraph", "qdrant_client")

HELD_OUT = "conv-held-out-1"
MEMORY_ENTRIES = "dev7_none,dev7_summarize,dev7_llamaindex_summary,dev7_langmem_summary"


@pytest.fixture
def unseen(locomo_path: Path, tmp_path: Path) -> Path:
    conversation = json.loads(locomo_path.read_text())[-1]
    a, b = conversation["conversation"]["speaker_a"], conversation["conversation"]["speaker_b"]
    renamed = json.loads(json.dumps(conversation).replace(a, "Marguerite").replace(b, "Tobias"))
    renamed["sample_id"] = HELD_OUT
    path = tmp_path / "locomo_held_out.json"
    path.write_text(json.dumps([renamed]))
    return path


def sweep(memlab_cli: Callable[..., int], out: Path, *args: str) -> pd.DataFrame:
    status = memlab_cli("run", "-m", *args, "debug=default", f"hydra.sweep.dir={out}")
    assert status == 0
    table = pd.read_csv(out / "comparison.csv")
    assert (table["status"] == "ok").all(), table.to_dict("records")
    return table


def test_peers_longterm_runs_on_an_unseen_conversation(
    unseen: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, memlab_cli: Callable[..., int]
) -> None:
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "longterm"
    table = sweep(memlab_cli, out, "experiment=peers_longterm", f"dataset.path={unseen}")
    assert len(table) == 4
    for job in (p for p in out.iterdir() if (p / "retrievals.jsonl").is_file()):
        lines = [json.loads(line) for line in (job / "retrievals.jsonl").read_text().splitlines()]
        assert lines and {line["dialogue"] for line in lines} == {HELD_OUT}
    assert sum(1 for p in out.iterdir() if (p / "retrievals.jsonl").is_file()) == 4


def test_peers_memory_runs_on_an_unseen_conversation(
    unseen: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, memlab_cli: Callable[..., int]
) -> None:
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "memory"
    table = sweep(
        memlab_cli,
        out,
        "experiment=peers_memory",
        f"+experiment/peers_memory={MEMORY_ENTRIES}",
        "dataset=locomo",
        f"dataset.path={unseen}",
    )
    assert len(table) == 4
    for job in (p for p in out.iterdir() if (p / "manifest.json").is_file()):
        assert str(unseen) in (job / "config.yaml").read_text()
