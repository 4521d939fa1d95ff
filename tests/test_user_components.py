"""Components of one's own that return the wrong thing end the run in one line naming them, never a traceback
from deep inside (token counting, the history codec); a context strategy that sends nothing is warned about."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

MODULE = """
from memlab.messages import Message


class Mine:
    name = "mine"

    def __init__(self, **settings):
        pass


class ReturnsNone(Mine):
    def apply(self, messages):
        return None


class ReturnsText(Mine):
    def apply(self, messages):
        return "hello"


class ReturnsDicts(Mine):
    def apply(self, messages):
        return [{"role": "user", "content": "x"}]


class ReturnsMixed(Mine):
    def apply(self, messages):
        return [Message(role="user", content="x"), "y"]


class ReturnsNothing(Mine):
    def apply(self, messages):
        return []


class NoApply:
    name = "mine"

    def __init__(self, **settings):
        pass


def no_dataset(**settings):
    return None


def dict_dataset(**settings):
    return [{"messages": []}]
"""

OUT = "a new list of memlab.messages.Message"


@pytest.fixture
def user_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    (tmp_path / "user_components.py").write_text(MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    return "user_components"


@pytest.mark.parametrize(
    ("group", "target", "said"),
    [
        ("context=trim", "ReturnsNone", "context strategy 'mine' (ReturnsNone) returned None;"),
        ("context=trim", "ReturnsText", "context strategy 'mine' (ReturnsText) returned str;"),
        ("context=trim", "ReturnsDicts", "context strategy 'mine' (ReturnsDicts) returned a list holding dict;"),
        ("context=trim", "ReturnsMixed", "context strategy 'mine' (ReturnsMixed) returned a list holding str;"),
        ("context=trim", "NoApply", "context.strategy built 'NoApply', which is not a context strategy;"),
        ("memory=trim", "ReturnsNone", "memory strategy 'mine' (ReturnsNone) returned None;"),
        ("memory=trim", "ReturnsDicts", "memory strategy 'mine' (ReturnsDicts) returned a list holding dict;"),
    ],
)  # fmt: skip
def test_a_strategy_that_returns_no_messages_is_one_line_naming_it(
    memlab_run_err: Callable[..., tuple[int, str]], user_module: str, tmp_path: Path, group: str, target: str, said: str
) -> None:
    key = f"{group.split('=')[0]}.strategy._target_={user_module}.{target}"
    status, err = memlab_run_err("debug=default", group, key, f"output_dir={tmp_path / 'run'}")
    assert status == 2 and err.startswith(f"memlab: error: {said}") and err.count("\n") == 1, err
    how = f"apply(messages) must return {OUT}" if target != "NoApply" else "`apply(messages) -> list[Message]`"
    assert how in err and not (tmp_path / "run").exists()


@pytest.mark.parametrize(
    ("target", "said"),
    [
        ("no_dataset", "the dataset (user_components.no_dataset) gave NoneType; expected Dialogues"),
        ("dict_dataset", "the dataset (user_components.dict_dataset) gave dict; expected memlab.dialogues.Dialogue"),
    ],
)
def test_a_dataset_that_gives_no_dialogues_is_one_line_naming_it(
    memlab_run_err: Callable[..., tuple[int, str]], user_module: str, tmp_path: Path, target: str, said: str
) -> None:
    args = (
        "debug=default",
        "dataset=jsonl",
        f"dataset._target_={user_module}.{target}",
        f"output_dir={tmp_path / 'r'}",
    )
    status, err = memlab_run_err(*args)
    assert status == 2 and err == f"memlab: error: {said}\n", err


def test_a_context_strategy_that_sends_nothing_is_warned_about_once(
    memlab_run_err: Callable[..., tuple[int, str]], user_module: str, tmp_path: Path
) -> None:
    """A peer may cut a whole request at a tiny budget, so the run goes on; its token figures say 0 sent."""
    run = tmp_path / "run"
    target = f"context.strategy._target_={user_module}.ReturnsNothing"
    status, err = memlab_run_err("debug=default", "context=trim", target, f"output_dir={run}")
    warning = "memlab: WARNING: context strategy 'mine' sent 26 empty requests (the first for a history of"
    assert status == 0 and err.count(warning) == 1, err
    assert (run / "run.log").read_text().count("sent 26 empty requests") == 1


def test_empty_requests_of_a_parallel_replay_are_warned_about_once_in_run_log(
    memlab_run_err: Callable[..., tuple[int, str]], user_module: str, tmp_path: Path
) -> None:
    """The defect: each worker warned on stderr about its own first empty request, and run.log said nothing."""
    run = tmp_path / "run"
    target = f"context.strategy._target_={user_module}.ReturnsNothing"
    args = ("debug=default", "sim.max_dialogues=3", "sim.workers=2", "context=trim", target, f"output_dir={run}")
    status, err = memlab_run_err(*args)
    assert status == 0 and err.count("empty request") == 1, err  # "request" also finds the old wording
    assert (run / "run.log").read_text().count("empty request") == 1


def test_requests_left_with_the_system_prompt_alone_are_warned_about(
    memlab_run_err: Callable[..., tuple[int, str]], tau_bench_path: Path, tmp_path: Path
) -> None:
    """The defect: SLIDING_WINDOW at 1,000 tokens under tau-bench's 1,250-token policy sent the policy alone on every
    call, and nothing said so (recommend then picked it)."""
    run = tmp_path / "run"
    data = ("dataset=tau_bench", f"dataset.path={tau_bench_path}", "sim.max_dialogues=2", f"output_dir={run}")
    status, err = memlab_run_err(*data, "context=sliding_window", "context.max_tokens=1000")
    said = "memlab: WARNING: context strategy 'sliding_window' sent only system messages, no turn to answer, on 20 of"
    assert status == 0 and err.count(said) == 1, err
    assert (run / "run.log").read_text().count("no turn to answer") == 1
    status, err = memlab_run_err(*data[:-1], f"output_dir={tmp_path / 'wide'}", "context=sliding_window")
    assert status == 0 and "no turn to answer" not in err, err  # at its default 4,000 it sends the turns
