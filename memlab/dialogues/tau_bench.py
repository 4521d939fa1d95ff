"""tau-bench trajectories: tool-calling agent runs, one `Dialogue` per (task, trial).

Sierra Research, https://github.com/sierra-research/tau-bench (``historical_trajectories/*.json``).
A file is a list of ``{task_id, reward, info, traj, trial}``; ``traj`` is an OpenAI message list
whose leading system message (the domain policy) becomes `Dialogue.system_prompt`. Message ids
are ``T<task_id>.<trial>:<index>``, the index into ``traj``, so they stay stable and traceable.

No probes: a trajectory's outcome is graded by replaying database actions (``reward``), not by
questions over its text, so there is nothing a memory strategy could be asked to recall. The
reward, task and trial are kept in `Dialogue.metadata` for slicing results.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from memlab.dialogues.model import UNIQUE_DIALOGUE_IDS, Dialogue, Session
from memlab.dialogues.openai_format import check_tool_results, parse_message
from memlab.dialogues.source import JsonReader, child, read_records

TAU_BENCH_SOURCE = (
    "get a trajectory file from https://github.com/sierra-research/tau-bench "
    "(historical_trajectories/gpt-4o-airline.json)"
)


def load_tau_bench(path: str | Path, max_dialogues: int | None = None) -> list[Dialogue]:
    """The first `max_dialogues` trajectories of a tau-bench results file (all by default).

    Parameters: the fields of `memlab.dialogues.schemas.TauBenchConfig`, each documented there once.
    """
    empty = "no trajectories (the file is []); expected a list of tau-bench results"
    reader, runs = read_records(path, hint=TAU_BENCH_SOURCE, dataset="tau_bench", empty=empty)
    if max_dialogues is not None:
        runs = runs[:max_dialogues]
    dialogues = [_dialogue(reader, raw, child("", i)) for i, raw in enumerate(runs)]
    first: dict[str, int] = {}
    for i, d in enumerate(dialogues):
        j = first.setdefault(d.id, i)
        if j != i:  # one trajectory twice, or two results files joined into one
            task, trial = d.metadata["task_id"], d.metadata["trial"]
            raise reader.error(
                child("", i),
                f"task_id {task!r} and trial {trial!r} give the dialogue id {d.id!r}, as [{j}]'s do (two results "
                f"files joined into one?); {UNIQUE_DIALOGUE_IDS}",
            )
    return dialogues


def _dialogue(reader: JsonReader, raw: Any, where: str) -> Dialogue:
    reader.expect(raw, dict, where)
    task_id = reader.get(raw, "task_id", (int, str), where)
    trial = reader.optional(raw, "trial", (int, str), where) or 0
    reward = reader.optional(raw, "reward", float, where)
    info = reader.optional(raw, "info", dict, where) or {}
    task = reader.optional(info, "task", dict, child(where, "info")) or {}
    user_id = reader.optional(task, "user_id", str, child(child(where, "info"), "task"))
    traj_at = child(where, "traj")
    prefix = f"T{task_id}.{trial}"
    traj = reader.get(raw, "traj", list, where)
    messages, wheres = [], []
    for i, m in enumerate(traj):
        messages.append(parse_message(reader, m, child(traj_at, i), id=f"{prefix}:{i}"))
        wheres.append(child(traj_at, i))
    system_prompt = None
    if messages and messages[0].role == "system":
        system_prompt = messages[0].text
        messages, wheres = messages[1:], wheres[1:]
    if not messages:
        raise reader.error(traj_at, "no messages besides the system policy; expected a trajectory")
    reused = check_tool_results(reader, messages, wheres)
    return Dialogue(
        id=f"tau-{task_id}-{trial}",
        sessions=(Session(id="S1", messages=tuple(messages)),),
        system_prompt=system_prompt,
        user_id=user_id or f"tau-user-{task_id}",
        metadata={"task_id": task_id, "trial": trial, "reward": reward, "tool_call_ids_reused": reused},
    )
