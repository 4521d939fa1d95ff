"""Sweep folder names: a token no two sweeps share, and job folders named by what the sweep varies."""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path

from omegaconf import OmegaConf

from memlab.naming import MAX_CHARS, MULTIRUN_FILE, job_name, register_resolver, sweep_settings
from memlab.report.sweep import expected_jobs

JOB = "${memlab_job:${num},${task},${sweep}}"


def test_a_sweep_folder_token_is_drawn_once_per_config_and_differs_between_configs() -> None:
    register_resolver()
    first = OmegaConf.create({"dir": "sweeps/x/${memlab_token:}", "again": "${memlab_token:}"})
    second = OmegaConf.create({"dir": "sweeps/x/${memlab_token:}"})
    drawn = first.dir
    assert re.fullmatch(r"sweeps/x/[0-9a-f]{8}", drawn) and first.dir == drawn  # read again: the same folder
    assert drawn.endswith(first.again) and drawn != second.dir


def _job(sweep: Path, num: int, task: list[str]) -> str:
    register_resolver()
    return str(OmegaConf.create({"num": num, "task": task, "sweep": str(sweep), "name": JOB}).name)


def test_a_job_folder_names_the_values_the_sweep_varies(tmp_path: Path) -> None:
    """A named experiment's sweep (hydra.sweeper.params) and the command line's, as Hydra's basic sweeper runs them."""
    (tmp_path / MULTIRUN_FILE).write_text(
        "hydra:\n"
        "  sweeper:\n"
        "    _target_: hydra._internal.core_plugins.basic_sweeper.BasicSweeper\n"
        "    params:\n"
        "      context: none,trim\n"
        "  overrides:\n"
        "    task: [experiment=demo, dataset.path=/data/locomo_dev7.json, 'context.max_tokens=1000,4000']\n"
    )
    task = ["context=trim", "experiment=demo", "dataset.path=/data/locomo_dev7.json", "context.max_tokens=4000"]
    assert _job(tmp_path, 3, task) == "3_context=trim,max_tokens=4000"
    assert expected_jobs(tmp_path) == 4  # the experiment's two contexts times the command line's two budgets
    pinned = (tmp_path / MULTIRUN_FILE).read_text().replace("task: [", "task: [context=trim, ")
    (tmp_path / MULTIRUN_FILE).write_text(pinned)  # the command line pins the experiment's context, as Hydra lets it
    assert _job(tmp_path, 1, task) == "1_max_tokens=4000" and expected_jobs(tmp_path) == 2


def test_without_the_sweep_config_a_job_folder_names_every_override(tmp_path: Path) -> None:
    """A remote launcher's worker may not see the sweep folder: the name falls back to the whole command line."""
    assert _job(tmp_path, 0, ["dataset.dialogues=1", "context=none"]) == "0_dialogues=1,context=none"
    assert _job(tmp_path, 1, ["hydra.launcher.n_jobs=2"]) == "1"


def test_a_long_name_keeps_whole_overrides_and_ends_in_a_hash_of_the_whole() -> None:
    overrides = [
        "context=summarize",
        "context.max_tokens=1000",
        "context.keep_last=4",
        "dataset.path=/d/long_name.json",
    ]
    whole = "context=summarize,max_tokens=1000,keep_last=4,path=long_name.json"
    digest = hashlib.sha256(whole.encode()).hexdigest()[:8]
    assert job_name(overrides) == f"context=summarize,max_tokens=1000,keep_last=4-{digest}"
    assert (
        job_name(["seed=" + "9" * 70])
        == f"seed={'9' * 50}-{hashlib.sha256(('seed=' + '9' * 70).encode()).hexdigest()[:8]}"
    )
    assert (
        job_name(["a=1", "b=" + "x" * 60])
        == f"a=1,b={'x' * 49}-{hashlib.sha256(('a=1,b=' + 'x' * 60).encode()).hexdigest()[:8]}"
    )
    exact = "a=1,b=" + "x" * 49  # the cut falls on a comma: the override before it is whole
    assert job_name(["a=1", "b=" + "x" * 49, "c=" + "y" * 20]).startswith(exact + "-")
    assert all(len(job_name([f"k{i}=" + "v" * i, "z=1"])) <= MAX_CHARS for i in range(100))


def test_a_rewritten_sweep_config_is_read_again(tmp_path: Path) -> None:
    """The parse is reused per text, not per file: a same-size rewrite within the clock's tick is seen."""
    path = tmp_path / MULTIRUN_FILE
    for value in (1, 2, 3):
        path.write_text(f"hydra:\n  mode: {value}\n")
        os.utime(path, ns=(1_000_000_000, 1_000_000_000))  # one tick: the size and times say nothing changed
        settings = sweep_settings(tmp_path)
        assert settings == {"mode": value}
        settings["mode"] = "changed"  # the caller's own copy
    assert sweep_settings(tmp_path) == {"mode": 3}
