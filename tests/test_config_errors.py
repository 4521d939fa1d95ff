"""Errors that teach: unknown and misplaced keys fail at start, list the valid keys and name the right path."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest


@pytest.mark.parametrize(
    ("overrides", "expected"),
    [
        # Hydra's own rejection, explained: the node's keys and where a `language` does exist.
        (
            ["context=summarize", "context.language=zh"],
            ["context.language: no such key", "max_tokens, keep_first", "it is at context.strategy.language"],
        ),
        # A strategy's own parameter it does not have: its keys.
        (["context=trim", "context.strategy.max_tokens=5"], ["context.strategy (TrimConfig); its keys are keep_first"]),
        # Right key, wrong entry: which entries have it.
        (["memory=delete", "memory.strategy.keep_last=5"], ["its keys are keep_latest"]),
        # What `+` lets past Hydra's struct check.
        (["+foo=1"], ["foo: no such key in the run config", "seed, tokenizer"]),
        (["+contxt=sliding_window"], ["contxt: no such key", "did you mean context"]),
        (["context=trim", "+context.language=1"], ["context.language: no such key in context (TrimContextConfig)"]),
        (["seeed=1"], ["did you mean seed"]),
        (["max_tokens=5"], ["it is at eval.max_tokens", "context.max_tokens is a key of context="]),
        (["context=trimm"], ["Could not find 'context/trimm'", "composite", "sliding_window"]),
    ],
)
def test_a_wrong_key_fails_at_start_with_a_teaching_line(
    tmp_path: Path, memlab_run_err: Callable[..., tuple[int, str]], overrides, expected
) -> None:
    status, stderr = memlab_run_err(*overrides, f"output_dir={tmp_path / 'run'}")
    assert status == 2, stderr
    (line,) = [ln for ln in stderr.splitlines() if ln.startswith("memlab: error: ")]
    for text in expected:
        assert text in line
    assert "Traceback" not in stderr and "+context" not in stderr
    assert not (tmp_path / "run").exists() and not (tmp_path / "reports").exists()


@pytest.mark.parametrize(
    "overrides",
    [["context=trim,sliding_window", "+foo=1"], ["context=trim,sliding_window", "context.max_tokens=1,x"]],
)
def test_a_sweep_with_a_wrong_key_stops_and_leaves_no_folder(
    tmp_path: Path, memlab_run_err: Callable[..., tuple[int, str]], overrides
) -> None:
    status, stderr = memlab_run_err("-m", *overrides, "dataset.dialogues=1")
    assert status == 2, stderr
    assert stderr.rstrip().splitlines()[-1].startswith("memlab: error: ")
    assert not (tmp_path / "reports").exists() or not any((tmp_path / "reports").rglob("*"))


@pytest.mark.parametrize(
    ("overrides", "said"),
    [
        # Hydra sets the key on the sweep's starting config (the default context=none) before any job: every
        # swept entry has it, and the line blamed context=none without the spelling that works
        (
            ["context=sliding_window,llamaindex_buffer", "context.strategy.keep_system=false"],
            "context.strategy.keep_system: every swept entry (context=sliding_window|llamaindex_buffer) has it, but "
            "Hydra sets it first on the config the sweep starts from (the default context=none), which lacks it; "
            "write ++context.strategy.keep_system=false, which sets it in each job",
        ),
        (
            ["context=trim,summarize", "context.strategy.language=zh"],
            "context.strategy.language: of the swept entries only context=summarize has it, not context=trim; "
            "sweep those apart: memlab run -m context=summarize context.strategy.language=zh",
        ),
        # the single run's hint, lost in a sweep
        (
            ["context=trim,summarize", "context.language=zh"],
            "context.language: no swept entry (context=trim|summarize) has it; it is at context.strategy.language "
            "(context=summarize)",
        ),
        # a key only some jobs' entries have, with ++: job 0 failed, job 1 ran and published, then status 2
        (
            ["context=trim,summarize", "++context.strategy.language=zh"],
            "job 0 (context=trim): context.strategy.language: no such key in context.strategy (TrimConfig); its keys "
            "are keep_first, keep_last, placeholder; no job was run",
        ),
        # a 33-line traceback
        (
            ["context=sliding_window", "context.max_tokens=interval(500,2000)"],
            "context.max_tokens=interval(500,2000): interval() needs an optuna sweeper, which draws values from it: "
            "add hydra/sweeper=optuna (pip install 'memlab[optuna]'), or use hparams_search=window_budget",
        ),
    ],
)
def test_a_sweep_refused_at_start_says_so_in_one_line(
    tmp_path: Path, memlab_run_err: Callable[..., tuple[int, str]], overrides: list[str], said: str
) -> None:
    sweep = tmp_path / "sweep"
    status, stderr = memlab_run_err("-m", *overrides, "debug=default", f"hydra.sweep.dir={sweep}")
    assert status == 2 and stderr.endswith("\n") and stderr.count("\n") == 1, stderr
    assert stderr.startswith(f"memlab: error: {said}"), stderr
    assert not sweep.exists()


@pytest.mark.parametrize(
    ("overrides", "said"),
    [
        # each weight is in its range; together they leave the fused relevance 0/0 (NaN scores, an arbitrary ranking)
        (
            ["longterm.index.bm25_weight=0", "longterm.index.dense_weight=0"],
            "longterm.index: bm25_weight and dense_weight are both 0; the hybrid index needs a weight above 0",
        ),
        (["longterm.index.kind=foo"], "longterm.index.kind: 'foo'; expected one of exact, hnsw, hybrid"),
        (["longterm.language=fr"], "longterm.language: 'fr'; expected one of en, zh"),
        (["store=redis"], "longterm.store: RedisStore keeps sessions only (store=redis, say); long-term memory needs"),
        (["store=postgres", "store.schema=''"], "store.schema: '' is not a schema name memlab creates;"),
        (["store=postgres", "store.schema=pg_mine"], "store.schema: 'pg_mine' is not a schema name memlab creates;"),
        (
            ["store=postgres", "store.url=postgresql+asyncpg://postgres@127.0.0.1:5432/test"],
            "store.url: the driver of postgresql+asyncpg is not installed (No module named 'asyncpg')",
        ),
    ],
)
def test_a_setting_the_run_cannot_use_fails_before_the_replay_in_one_line(
    tmp_path: Path, memlab_run_err: Callable[..., tuple[int, str]], overrides: list[str], said: str
) -> None:
    """Each was a traceback, status 1, at the first memory rendered, saved or searched (NaN scores for the weights)."""
    status, stderr = memlab_run_err("debug=default", "longterm=chat", *overrides, f"output_dir={tmp_path / 'run'}")
    assert status == 2 and stderr.startswith(f"memlab: error: {said}") and stderr.count("\n") == 1, stderr
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize(
    "override",
    [
        "+longterm.agents.bot.max_items=5",
        "+longterm.agents.bot={max_items:5}",
        "longterm.agents={bot:{enabled:true}}",
        "longterm.agents.bot.max_items=5",
    ],
)
def test_a_new_agent_id_on_the_command_line_says_where_it_goes(
    tmp_path: Path, memlab_run_err: Callable[..., tuple[int, str]], override: str
) -> None:
    """OmegaConf builds no typed `agents.<id>` entry from an override; the line said "dict is not a subclass of
    AgentOverrides" or listed LongTermConfig's keys."""
    status, stderr = memlab_run_err("longterm=default", "agent_id=bot", override, f"output_dir={tmp_path / 'run'}")
    assert status == 2 and stderr.startswith("memlab: error: longterm.agents: a new agent id cannot be added on the ")
    assert "--config-dir conf longterm=mine agent_id=bot" in stderr and not (tmp_path / "run").exists()


def own_entry(tmp_path: Path, group: str, text: str) -> None:
    """`conf/<group>/mine.yaml` under `tmp_path`: an entry of the user's own, read with `--config-dir conf`."""
    path = tmp_path / "conf" / group / "mine.yaml"
    path.parent.mkdir(parents=True)
    path.write_text(text)


def test_a_new_agent_id_in_a_config_file_of_ones_own_is_used(
    tmp_path: Path, memlab_run_err: Callable[..., tuple[int, str]]
) -> None:
    """The way the error and docs/longterm.md give, as written there."""
    own_entry(tmp_path, "longterm", "defaults: [default, _self_]\nagents: {bot: {enabled: true, max_items: 5}}\n")
    run = tmp_path / "run"
    args = ("--config-dir", "conf", "longterm=mine", "agent_id=bot", "debug=default", f"output_dir={run}")
    status, stderr = memlab_run_err(*args)
    assert status == 0, stderr
    config = (run / "config.yaml").read_text()
    assert "    bot:\n      enabled: true\n      namespace: null\n      max_items: 5\n" in config
    metrics = json.loads((run / "metrics.json").read_text())
    kept = metrics["longterm.memories"] - metrics["longterm.archived.max_items"]
    assert metrics["longterm.archived.max_items"] > 0 and kept == 5  # bot's cap of 5, not the default 100


def test_a_shared_knob_on_an_untyped_entry_names_the_entry_and_the_way(
    tmp_path: Path, memlab_run_err: Callable[..., tuple[int, str]]
) -> None:
    """The defect: `context.keep_last: no such key in context (dict)`: neither the entry named nor what to do."""
    own_entry(
        tmp_path,
        "context",
        "_target_: memlab.context.ContextEditingInterceptor\n"
        "strategy:\n  _target_: memlab.context.SlidingWindow\n  max_tokens: 1000\n",
    )
    for override, expected in (
        (
            "context.keep_last=2",
            [
                "memlab: error: context.keep_last: no such key: context=mine has no schema (an untyped entry), so it "
                "takes only the keys its YAML sets; context has strategy",
                "context.keep_last is a knob of the typed entries (context=",
                "set the strategy's own parameter: +context.strategy.keep_last=2",
                "docs/extending.md",
            ],
        ),
        (
            "context.strategy.max_tokenz=2",
            ["context.strategy has max_tokens; did you mean context.strategy.max_tokens?"],
        ),
    ):
        status, stderr = memlab_run_err("--config-dir", "conf", "context=mine", override, "dataset.dialogues=1")
        (line,) = [ln for ln in stderr.splitlines() if ln.startswith("memlab: error: ")]
        assert status == 2 and all(text in line for text in expected), line
    assert not (tmp_path / "reports").exists()
