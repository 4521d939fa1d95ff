"""tau-bench trajectories replayed through AgentMemory with each compressor (`agent_memory=...`), and
chat histories backed by a store (`store=...`): tokens fall, tool pairs survive, runs stay deterministic."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from hydra.utils import instantiate

from memlab.dialogues import load_tau_bench
from memlab.experiment import run_experiment
from memlab.memory import AgentMemoryHistory
from memlab.messages import Message
from memlab.runtime import Component, Runtime, SecurityContext
from memlab.sim import CallRecord, LifecycleRecord, simulate
from memlab.tokens import get_counter
from memlab.trace import MEMORY_COMPRESS
from memlab.units import orphans

TRAJECTORIES = 15


class Requests(Component):
    """Keeps every request the runtime would send (test instrumentation, order last)."""

    order = 1_000

    def __init__(self) -> None:
        self.sent: list[list[Message]] = []

    def stages(self) -> Sequence[Any]:
        return (self,)

    def process(self, messages: list[Message], ctx: Any) -> list[Message]:
        self.sent.append(messages)
        return messages


def replay(make_config: Any, path: Path, entry: str, *overrides: str) -> tuple[list[Any], Requests]:
    factory = instantiate(make_config(f"agent_memory={entry}", *overrides).agent_memory)
    requests = Requests()
    counter = get_counter("cl100k_base")
    dialogues = load_tau_bench(path, max_dialogues=TRAJECTORIES)

    def runtime(d: Any) -> Runtime:
        return Runtime(factory(d.id), counter, SecurityContext(d.user_id), [requests], system_prompt=d.system_prompt)

    return list(simulate(dialogues, runtime)), requests


def total(records: list[Any]) -> int:
    return sum(r.prompt_tokens for r in records if isinstance(r, CallRecord))


def test_compressors_cut_prompt_tokens_and_keep_tool_pairs(make_config: Any, tau_bench_path: Path) -> None:
    chat, chat_requests = replay(make_config, tau_bench_path, "chat")
    totals = {"chat": total(chat)}
    for entry in ("windowed", "hybrid", "per_task"):
        records, requests = replay(make_config, tau_bench_path, entry)
        totals[entry] = total(records)
        assert len(requests.sent) == len(chat_requests.sent)  # one request per assistant turn, as without memory
        assert all(orphans(r) == [] for r in requests.sent), entry  # no tool result without its call, or vice versa
        compressed = [
            e for r in records if isinstance(r, LifecycleRecord) for e in r.events if e.kind == MEMORY_COMPRESS
        ]
        assert compressed and all(e.data["after_items"] < e.data["before_items"] for e in compressed), entry
        if entry != "windowed":
            assert any(m.role == "system" and m is not r[0] for r in requests.sent for m in r[:2]), entry  # a summary
    assert (
        totals["windowed"] < totals["chat"]
        and totals["hybrid"] < totals["chat"]
        and totals["per_task"] < totals["chat"]
    )


def test_the_window_bounds_the_items_a_request_carries(make_config: Any, tau_bench_path: Path) -> None:
    _records, requests = replay(make_config, tau_bench_path, "windowed", "agent_memory.compressor.max_items=8")
    # system prompt + at most 8 items (joined calls make fewer messages), or one larger tool exchange
    assert max(len(r) for r in requests.sent) <= 1 + 8 + 4


def test_agent_history_messages_are_summary_then_items(make_config: Any) -> None:
    history = instantiate(
        make_config(
            "agent_memory=hybrid", "agent_memory.compressor.max_items=2", "agent_memory.compressor.llm=null"
        ).agent_memory
    )("d")
    assert isinstance(history, AgentMemoryHistory)
    for i in range(4):
        history.append(Message(role="user" if i % 2 == 0 else "assistant", content=f"m{i}"))
    assert [m.text for m in history.messages()] == ["[压缩] 历史片段条数=1\n[压缩] 历史片段条数=1", "m2", "m3"]
    assert len(history) == 2


@pytest.mark.parametrize(
    "entry", [("agent_memory=chat",), ("agent_memory=hybrid", "agent_memory.compressor.max_items=3")]
)
def test_sqlite_backed_runs_match_in_memory_runs_byte_for_byte(make_config: Any, tmp_path: Path, entry: Any) -> None:
    sample = Path(__file__).resolve().parents[2] / "datasets" / "sample.jsonl"
    base = ("dataset=jsonl", f"dataset.path={sample}", *entry)
    memory = run_experiment(make_config(*base, "store=memory"), tmp_path / "memory")
    sqlite = run_experiment(
        make_config(*base, "store=sqlite", f"output_dir={tmp_path / 'sqlite'}"), tmp_path / "sqlite"
    )
    assert (tmp_path / "sqlite" / "memlab.sqlite").exists()  # the store's file is in the run directory
    assert (memory.run_dir / "metrics.json").read_bytes() == (sqlite.run_dir / "metrics.json").read_bytes()
