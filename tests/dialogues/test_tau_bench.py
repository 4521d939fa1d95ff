"""The tau-bench loader: real trajectories load whole, tool results stay paired, bad files fail clearly."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memlab.dialogues import load_tau_bench
from memlab.errors import DatasetError


@pytest.fixture(scope="module")
def raw(tau_bench_path: Path) -> list[dict]:
    return json.loads(tau_bench_path.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def dialogues(tau_bench_path: Path):
    return load_tau_bench(tau_bench_path)


def test_every_trajectory_loads_with_its_policy_ids_and_user(raw, dialogues) -> None:
    assert len(dialogues) == len(raw) == 150
    assert sum(len(d) for d in dialogues) == sum(len(r["traj"]) - 1 for r in raw)  # all but the system policy
    for r, d in zip(raw, dialogues, strict=True):
        assert d.id == f"tau-{r['task_id']}-{r['trial']}"
        assert d.system_prompt == r["traj"][0]["content"] and d.system_prompt.startswith("# Airline Agent Policy")
        assert d.user_id == r["info"]["task"]["user_id"]
        assert d.metadata["reward"] == r["reward"] and d.metadata["trial"] == r["trial"]
        assert not d.probes and len(d.sessions) == 1
        for m in d.messages():
            task, index = m.id.removeprefix("T").split(":")
            assert task == f"{r['task_id']}.{r['trial']}"
            source = r["traj"][int(index)]
            assert m.role == source["role"]
            assert m.content == (
                None if source.get("tool_calls") and source["content"] in (None, "None") else source["content"]
            )
    assert len({d.id for d in dialogues}) == 150


def test_tool_results_pair_with_the_calls_just_before_them(dialogues) -> None:
    calls = 0
    for d in dialogues:
        messages = list(d.messages())
        for i, m in enumerate(messages):
            if m.tool_calls:
                calls += len(m.tool_calls)
                answered = [r.tool_call_id for r in messages[i + 1 : i + 1 + len(m.tool_calls)]]
                # every call answered by the next messages, unless the trajectory stops there
                assert answered == [c.id for c in m.tool_calls][: len(answered)]
                assert len(answered) == len(m.tool_calls) or i + len(answered) == len(messages) - 1
            if m.role == "tool":
                owner = next(p for p in reversed(messages[:i]) if p.role != "tool")
                assert m.tool_call_id in {c.id for c in owner.tool_calls}
    assert calls == 862
    # tau-bench reuses call ids across turns of one trajectory; the loader counts it
    assert sum(d.metadata["tool_call_ids_reused"] for d in dialogues) > 0


def test_none_content_on_tool_calls_is_null(tmp_path: Path, write_json) -> None:
    call = {"id": "c1", "type": "function", "function": {"name": "lookup", "arguments": "{}"}}
    traj = [
        {"role": "system", "content": "policy"},
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "None", "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c1", "name": "lookup", "content": "{}"},
        {"role": "assistant", "content": None, "tool_calls": [{**call, "id": "c2"}]},
        {"role": "tool", "tool_call_id": "c2", "name": "lookup", "content": "{}"},
        {"role": "assistant", "content": "done"},
    ]
    [d] = load_tau_bench(write_json(tmp_path / "t.json", [{"task_id": 3, "trial": 1, "reward": 1.0, "traj": traj}]))
    messages = list(d.messages())
    assert [m.content for m in messages if m.tool_calls] == [None, None]
    assert [m.id for m in messages] == [f"T3.1:{i}" for i in range(1, 7)]
    assert d.user_id == "tau-user-3" and d.system_prompt == "policy"


def test_max_dialogues(tau_bench_path: Path) -> None:
    assert [d.id for d in load_tau_bench(tau_bench_path, max_dialogues=2)] == ["tau-0-0", "tau-1-0"]


@pytest.mark.parametrize(
    ("traj", "message"),
    [
        ([{"role": "system", "content": "p"}], r"\[0\]\.traj: no messages besides the system policy"),
        (
            [{"role": "robot", "content": "x"}],
            r"\[0\]\.traj\[0\]\.role: unknown role 'robot'; expected one of system, user",
        ),
        ([{"content": "x"}], r'\[0\]\.traj\[0\]: missing key "role"'),
        (
            [{"role": "user", "content": 5}],
            r"\[0\]\.traj\[0\]\.content: expected a string or a list or null, got an integer",
        ),
        (
            [{"role": "user", "content": [{"type": "text", "text": None}]}],
            r"\[0\]\.traj\[0\]\.content\[0\]\.text: expected a string, got null$",
        ),
        (
            [{"role": "user", "content": "hi"}, {"role": "tool", "tool_call_id": "c9", "content": "{}"}],
            r"\[0\]\.traj\[1\]\.tool_call_id: 'c9' answers no tool call of the preceding assistant message",
        ),
        ([{"role": "tool", "content": "{}"}], r'\[0\]\.traj\[0\]: missing key "tool_call_id"'),
        (
            [{"role": "assistant", "tool_calls": [{"id": "c1", "function": {}}]}],
            r'\[0\]\.traj\[0\]\.tool_calls\[0\]\.function: missing key "name"',
        ),
        ("not a list", r"\[0\]\.traj: expected a list, got a string"),
    ],
)
def test_broken_trajectory_names_the_place(tmp_path: Path, write_json, traj, message) -> None:
    path = write_json(tmp_path / "bad.json", [{"task_id": 0, "trial": 0, "traj": traj}])
    with pytest.raises(DatasetError, match=message) as e:
        load_tau_bench(path)
    assert str(e.value).startswith(f"{path}: ")


def test_a_task_and_trial_given_twice_are_named(tmp_path: Path, write_json) -> None:
    """Two results files joined into one: the run's generic check named neither the file nor the place."""
    run = {"task_id": 0, "trial": 0, "traj": [{"role": "user", "content": "hi"}]}
    path = write_json(tmp_path / "joined.json", [run, {**run, "trial": 1}, {**run, "task_id": "0"}])
    with pytest.raises(DatasetError) as e:
        load_tau_bench(path)
    assert str(e.value) == (
        f"{path}: [2]: task_id '0' and trial 0 give the dialogue id 'tau-0-0', as [0]'s do (two results files joined "
        "into one?); dialogue ids are unique: each names its own history in the store"
    )


def test_missing_task_id(tmp_path: Path, write_json) -> None:
    with pytest.raises(DatasetError, match=r'\[1\]: missing key "task_id" \(expected an integer or a string\)'):
        load_tau_bench(write_json(tmp_path / "bad.json", [{"task_id": 0, "traj": [{"role": "user"}]}, {"traj": []}]))
