"""Sweeps through the real CLI: a broken configuration is marked failed and the sweep still compares."""

from __future__ import annotations

import builtins
import io
import json
import os
import re
import shutil
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
import yaml
from hydra.experimental.callback import Callback
from in_process import memlab_main
from omegaconf import DictConfig
from replays import NO_FIGURES
from simulated_runs import job_dir

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "datasets" / "sample.jsonl"


ENV = {**os.environ, "PYTHONPATH": str(ROOT), "CI": "1"}
COMPARISON = ("comparison.csv", "comparison.md", "comparison.html")
TINY = ("dataset.dialogues=1", "dataset.sessions=2", "dataset.facts=2", NO_FIGURES)  # no test here reads a figure


def memlab(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "memlab", *args], cwd=cwd, env=ENV, capture_output=True, text=True)


def test_a_broken_configuration_does_not_stop_the_sweep(tmp_path: Path) -> None:
    """Basic sweeper, jobs in two joblib worker processes; the missing file breaks jobs 1 and 3."""
    sweep = tmp_path / "sweep"
    out = memlab(
        "run",
        "-m",
        "hydra/launcher=joblib",
        "hydra.launcher.n_jobs=2",
        "dataset=jsonl",
        "sim.probe_context=true,false",
        f"dataset.path={SAMPLE},{tmp_path / 'missing.jsonl'}",
        f"hydra.sweep.dir={sweep}",
        NO_FIGURES,
        cwd=tmp_path,
    )
    assert out.returncode == 1, out.stderr  # a sweep with a failed job is not a success
    assert "compared 4 configurations, 2 failed" in out.stderr
    assert f"memlab: error: job(s) 1, 3 failed in {sweep}; sweep.allow_failures=true to accept" in out.stderr
    error = json.loads((job_dir(sweep, 1) / "error.json").read_text())
    assert error["type"] == "MissingFileError" and "missing.jsonl" in error["message"]
    assert (job_dir(sweep, 2) / "metrics.json").is_file()
    assert (job_dir(sweep, 0) / "metrics.json").read_bytes() == (job_dir(sweep, 2) / "metrics.json").read_bytes()
    table = pd.read_csv(sweep / "comparison.csv")
    assert list(table["status"]) == ["ok", "failed", "ok", "failed"]
    assert table["error"].fillna("").str.contains("missing.jsonl").tolist() == [False, True, False, True]
    assert "failed" in (sweep / "comparison.html").read_text()
    # the same comparison rebuilds from the directories alone
    again = memlab("report", str(sweep), "-o", str(tmp_path / "again"), cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    assert pd.read_csv(tmp_path / "again" / "comparison.csv")["label"].tolist() == table["label"].tolist()
    title = (sweep / "comparison.md").read_text().splitlines()[0]
    assert (tmp_path / "again" / "comparison.md").read_text().splitlines()[0] == title == "# memlab sweep: default"
    # a failed job's own folder has no report to rebuild (a comparison of one failed row was written into it)
    failed = memlab("report", str(job_dir(sweep, 1)), cwd=tmp_path)
    assert failed.returncode == 2 and f"memlab: error: {job_dir(sweep, 1)}: the run failed (MissingFileError: " in (
        failed.stderr
    )
    assert not (job_dir(sweep, 1) / "comparison.md").exists()
    # a job killed before it finished leaves no run directory: the report says which is missing
    for name in ("metrics.json", "calls.csv"):
        (job_dir(sweep, 2) / name).unlink()
    killed = memlab("report", str(sweep), "-o", str(tmp_path / "killed"), cwd=tmp_path)
    assert killed.returncode == 0, killed.stderr
    assert f"memlab: {sweep}: job(s) 2 never finished" in killed.stderr


def test_a_sweep_whose_jobs_never_finished_is_no_baseline_and_compare_and_recommend_say_so(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    memlab_run_err: Callable[..., tuple[int, str]],
    capfd: pytest.CaptureFixture[str],
) -> None:
    """A sweep killed before jobs 1 and 2 ran: `--update` used to write a baseline of job 0 alone, which then
    passed every compare with its other configurations "new", never gated."""
    monkeypatch.setenv("CI", "1")
    sweep = tmp_path / "sweep"
    assert memlab_run_err("-m", *TINY, "context=none,trim,sliding_window", f"hydra.sweep.dir={sweep}")[0] == 0
    shutil.rmtree(job_dir(sweep, 1))  # killed before it started: no folder
    for path in job_dir(sweep, 2).iterdir():  # killed while it ran: a folder, nothing published in it
        path.unlink()
    baseline = tmp_path / "baseline.json"
    status = memlab_main("compare", str(baseline), str(sweep), "--update")
    err = capfd.readouterr().err
    said = f"memlab: error: {sweep}: job(s) 1, 2 never finished (killed, or not started); {baseline} was not written"
    assert status == 2 and err.startswith(said) and err.count("\n") == 1 and not baseline.exists(), err
    assert memlab_main("compare", str(sweep), str(sweep)) == 0
    said = f"memlab: WARNING: {sweep}: job(s) 1, 2 never finished: their configurations are not compared"
    assert capfd.readouterr().err.count(said) == 2  # each side
    assert memlab_main("recommend", str(sweep), "--budget", "1e9") == 0
    said = f"memlab: WARNING: {sweep}: job(s) 1, 2 never finished: their configurations are not considered"
    assert said in capfd.readouterr().err


def test_a_glob_sweep_is_compared_and_read_back(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    memlab_run_err: Callable[..., tuple[int, str]],
    capfd: pytest.CaptureFixture[str],
) -> None:
    """The defect: the count of a `glob(...)` sweep's jobs asked Hydra's config loader, gone once the sweep ended:
    no comparison, exit status 0 (Hydra made the callback's error a warning), and report/recommend a traceback."""
    monkeypatch.setenv("CI", "1")
    sweep = tmp_path / "sweep"
    status, err = memlab_run_err("-m", *TINY, "context=glob(sliding*)", "seed=1,2", f"hydra.sweep.dir={sweep}")
    assert status == 0 and "compared 2 configurations;" in err and "Warning" not in err, err
    assert len(pd.read_csv(sweep / "comparison.csv")) == 2
    assert memlab_main("report", str(sweep)) == 0
    assert memlab_main("recommend", str(sweep), "--budget", "1e9") == 0
    assert "never finished" not in capfd.readouterr().err


def test_a_sweep_without_a_comparison_fails_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, memlab_run_err: Callable[..., tuple[int, str]]
) -> None:
    """A glob over a key's values matches no config group entry: Hydra launches no job, and the sweep said nothing
    and exited 0; its folder, only multirun.yaml, then refused the corrected command."""
    monkeypatch.setenv("CI", "1")
    sweep = tmp_path / "sweep"
    status, err = memlab_run_err("-m", *TINY, "context.keep_last=glob(*)", f"hydra.sweep.dir={sweep}")
    said = f"memlab: error: no comparison written in {sweep}: the sweep launched no job (glob(...) picks a config"
    assert status == 1 and said in err and err.count("memlab:") == 1, err
    assert not sweep.exists()


class InterruptJobTwo(Callback):
    """Ctrl-C as a sweep's job 2 starts (`+hydra.callbacks.interrupt._target_=test_sweeps.InterruptJobTwo`): the
    jobs before it are published, and the sweep never reaches its comparison."""

    def on_job_start(self, config: DictConfig, **kwargs: Any) -> None:
        if config.hydra.job.num == 2:
            raise KeyboardInterrupt


def test_an_interrupted_sweep_names_its_finished_jobs_and_their_comparison_its_missing_ones(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, memlab_run_err: Callable[..., tuple[int, str]]
) -> None:
    """The defect: the interrupt line did not say that jobs 0 and 1 were left, and the comparison `memlab report`
    then wrote said "2 configurations, 0 failed", the never-finished job on stderr only."""
    monkeypatch.setenv("CI", "1")
    sweep = tmp_path / "sweep"
    interrupt = "+hydra.callbacks.interrupt._target_=test_sweeps.InterruptJobTwo"
    status, err = memlab_run_err("-m", *TINY, "context=none,trim,sliding_window", interrupt, f"hydra.sweep.dir={sweep}")
    assert status == 130 and err.splitlines()[-1] == (
        f"memlab: interrupted; the running job was not published; job(s) 0, 1 finished in {sweep}: "
        f"memlab report {sweep} compares them"
    ), err
    assert not (sweep / "comparison.md").exists()
    assert memlab_main("report", str(sweep)) == 0
    said = f"{sweep}: job(s) 2 never finished: their configurations are not compared"
    md = (sweep / "comparison.md").read_text()
    assert md.startswith("# memlab sweep: default\n\n2 configurations, 0 failed.\n\n") and f"> **{said}.**" in md
    assert f'<div class="banner">{said}.</div>' in (sweep / "comparison.html").read_text()


def _interrupt_at(monkeypatch: pytest.MonkeyPatch, name: str, file: str) -> None:
    """SIGINT to this process once, as `name` (``open``, or ``os.replace``) is called on `file` (the file opened, or
    renamed to): Ctrl-C at that exact step of a real command."""
    modules = (builtins, io) if name == "open" else (os,)  # pathlib opens with io.open
    real, sent = getattr(modules[0], name), []

    def call(*args: Any, **kwargs: Any) -> Any:
        path = args[-1] if name == "replace" else args[0]
        if not sent and isinstance(path, str | os.PathLike) and Path(path).name == file:
            sent.append(path)
            os.kill(os.getpid(), signal.SIGINT)
        return real(*args, **kwargs)

    for module in modules:
        monkeypatch.setattr(module, name, call)


def _interrupted_sweep(
    monkeypatch: pytest.MonkeyPatch, memlab_run_err: Callable[..., tuple[int, str]], sweep: Path
) -> str:
    """What the interrupt line of a two-job sweep into `sweep` says after ``memlab: interrupted; `` (status 130)."""
    monkeypatch.setenv("CI", "1")
    status, err = memlab_run_err("-m", *TINY, "context=none,trim", f"hydra.sweep.dir={sweep}")
    assert status == 130 and err.splitlines()[-1].startswith("memlab: interrupted; "), err
    return err.splitlines()[-1].removeprefix("memlab: interrupted; ")


def test_ctrl_c_while_the_comparison_is_written_leaves_none_of_it_and_says_how_to_write_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, memlab_run_err: Callable[..., tuple[int, str]], capfd
) -> None:
    """The defect, reproduced with a real sweep and SIGINT while it opened comparison.md: comparison.csv was left
    whole beside no .md or .html, and the line said the comparison was not written; `memlab report` interrupted so
    printed a traceback and left the same."""
    sweep = tmp_path / "sweep"
    jobs = ["0_context=none", "1_context=trim", "multirun.yaml"]
    _interrupt_at(monkeypatch, "open", "comparison.md")
    assert _interrupted_sweep(monkeypatch, memlab_run_err, sweep) == (
        f"the comparison was not written; job(s) 0, 1 finished in {sweep}: memlab report {sweep} compares them"
    )
    assert sorted(p.name for p in sweep.iterdir()) == jobs  # no comparison file, and no staging folder
    _interrupt_at(monkeypatch, "open", "comparison.md")
    capfd.readouterr()
    assert memlab_main("report", str(sweep)) == 130
    assert capfd.readouterr().err == "memlab: interrupted; memlab report did not finish\n"
    assert sorted(p.name for p in sweep.iterdir()) == jobs
    assert memlab_main("report", str(sweep)) == 0  # as the line says
    assert (sweep / "comparison.md").read_text().startswith("# memlab sweep: default\n\n2 configurations, 0 failed.")


def test_ctrl_c_as_the_comparison_is_renamed_into_place_waits_for_all_three(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, memlab_run_err: Callable[..., tuple[int, str]]
) -> None:
    """Between the first rename and the last, a Ctrl-C would leave a mix: it is held back until all three are in."""
    sweep = tmp_path / "sweep"
    _interrupt_at(monkeypatch, "replace", "comparison.csv")
    assert _interrupted_sweep(monkeypatch, memlab_run_err, sweep) == (
        f"job(s) 0, 1 finished in {sweep}, and their comparison is written: {sweep / 'comparison.html'}"
    )
    assert (sweep / "comparison.md").read_text().startswith("# memlab sweep: default\n\n2 configurations, 0 failed.")
    assert {p.name for p in sweep.iterdir()} == {"0_context=none", "1_context=trim", "multirun.yaml", *COMPARISON}
    assert (sweep / "comparison.html").read_text().endswith("</html>\n")
    assert len(pd.read_csv(sweep / "comparison.csv")) == 2


def test_two_sweeps_started_together_keep_their_own_jobs(tmp_path: Path) -> None:
    """Two `memlab run -m` launched at once into one reports/ folder, each in the default sweep folder
    (issue 25: with 1-second folders and numbered jobs the second replaced the first's jobs)."""
    grids = {"none,trim": ["none", "trim"], "sliding_window,trim": ["sliding_window", "trim"]}
    command = [sys.executable, "-m", "memlab", "run", "-m", *TINY]
    out = subprocess.PIPE
    launched = {
        grid: subprocess.Popen([*command, f"context={grid}"], cwd=tmp_path, env=ENV, stdout=out, stderr=out, text=True)
        for grid in grids
    }
    sweeps = {}
    for grid, process in launched.items():
        _, err = process.communicate(timeout=600)
        assert process.returncode == 0, err
        (report,) = [line for line in err.splitlines() if "compared 2 configurations" in line]
        page = Path(report.rsplit(" ", 1)[-1])
        assert page.is_absolute(), report  # as each job's "results in" line, whatever the current directory
        sweeps[grid] = page.parent
    assert sorted(sweeps.values()) == sorted((tmp_path / "reports" / "sweeps" / "default").iterdir())
    for grid, sweep in sweeps.items():  # reports/sweeps/default/<time>-<token>/<job>_<what it varies>
        assert re.fullmatch(r"\d{8}-\d{6}-[0-9a-f]{8}", sweep.name), sweep
        jobs = sorted(p.name for p in sweep.iterdir() if p.is_dir())
        assert jobs == [f"{n}_context={value}" for n, value in enumerate(grids[grid])]
        assert all((sweep / job / "metrics.json").is_file() for job in jobs)
        table = pd.read_csv(sweep / "comparison.csv")
        assert table["param.context"].tolist() == grids[grid] and (table["status"] == "ok").all()
    again = memlab("report", str(sweeps["none,trim"]), cwd=tmp_path)  # what reads sweep folders reads these
    assert again.returncode == 0 and "compared 2 runs" in again.stdout, again.stderr
    assert memlab("compare", str(sweeps["none,trim"]), str(sweeps["none,trim"]), cwd=tmp_path).returncode == 0
    best = memlab("recommend", str(sweeps["sliding_window,trim"]), "--budget", "1e9", cwd=tmp_path)
    assert best.returncode == 0 and best.stdout.startswith("recommended: "), best.stderr


def test_allow_failures_accepts_a_failed_job(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, memlab_run_err: Callable[..., tuple[int, str]]
) -> None:
    """In this process: the basic sweeper runs its jobs in the caller's process, a new one adds nothing here."""
    monkeypatch.setenv("CI", "1")
    sweep = tmp_path / "sweep"
    status, err = memlab_run_err(
        "-m", *TINY, "dataset.turns_per_session=1,4", "sweep.allow_failures=true", f"hydra.sweep.dir={sweep}"
    )
    assert status == 0, err
    assert "job(s) 0 failed" in err and "allowed by sweep.allow_failures" in err


def test_a_sweep_into_a_folder_holding_an_earlier_sweep_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, memlab_run_err: Callable[..., tuple[int, str]]
) -> None:
    """The defect: a fixed hydra.sweep.dir run again with fewer configurations compared, gated and recommended
    the earlier sweep's extra job as this one's (3 configurations for a sweep of 2)."""
    monkeypatch.setenv("CI", "1")
    sweep = tmp_path / "sweep"
    assert memlab_run_err("-m", *TINY, "context=none,trim,sliding_window", f"hydra.sweep.dir={sweep}")[0] == 0
    before = {p: p.stat().st_mtime_ns for p in sweep.rglob("*")}
    status, err = memlab_run_err("-m", *TINY, "context=none,trim", f"hydra.sweep.dir={sweep}")
    assert status == 2 and err.startswith(f"memlab: error: hydra.sweep.dir={sweep} is not empty"), err
    assert len(err.splitlines()) == 1 and f"rm -r {sweep}" in err
    assert {p: p.stat().st_mtime_ns for p in sweep.rglob("*")} == before  # the earlier sweep as it was
    (tmp_path / "empty").mkdir()  # a folder of one's own, made empty for the sweep, is used
    assert memlab_run_err("-m", *TINY, "context=none", f"hydra.sweep.dir={tmp_path / 'empty'}")[0] == 0


@pytest.mark.parametrize(
    "sweeping",
    [("-m", "context=none,trim"), ("context=sliding_window", "hparams_search=window_budget")],
    ids=["-m", "hparams_search"],
)
def test_output_dir_in_a_sweep_is_refused_at_start(
    sweeping: tuple[str, ...],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    memlab_run_err: Callable[..., tuple[int, str]],
) -> None:
    """The defect: every job published into output_dir, each replacing the one before, and the sweep then said its
    jobs never finished; a preset that sweeps by itself (an optuna search) did the same."""
    if "hparams_search=window_budget" in sweeping:
        pytest.importorskip("hydra_plugins.hydra_optuna_sweeper", reason="needs memlab[optuna]")
    monkeypatch.setenv("CI", "1")
    out, sweep = tmp_path / "out", tmp_path / "sweep"
    status, err = memlab_run_err(*sweeping, *TINY, f"output_dir={out}", f"hydra.sweep.dir={sweep}")
    said = f"memlab: error: output_dir={out} in a sweep (-m, or a preset that sweeps, such as hparams_search=...): "
    assert status == 2 and err.startswith(said) and err.count("\n") == 1, err
    assert "leave output_dir out" in err and not out.exists() and not sweep.exists()


@pytest.fixture
def optuna_sweep(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Where an optuna sweep goes; the test is skipped without memlab[optuna]."""
    pytest.importorskip(
        "hydra_plugins.hydra_optuna_sweeper", reason="hydra-optuna-sweeper is not installed (memlab[optuna])"
    )
    monkeypatch.setenv("CI", "1")
    return tmp_path / "optuna"


# optuna's own SQLAlchemy deprecation, on importing its storage (in a process of its own it went unseen)
@pytest.mark.filterwarnings("ignore:The ``declarative_base")
def test_optuna_searches_for_the_objective(optuna_sweep: Path, memlab_run_err: Callable[..., tuple[int, str]]) -> None:
    """In this process, as the test above: optuna's trials run in the caller's process."""
    sweep = optuna_sweep
    status, err = memlab_run_err(
        "-m",
        "hydra/sweeper=optuna",
        "hydra.sweeper.n_trials=3",
        "hydra.sweeper.direction=minimize",
        "hydra.sweeper.sampler.seed=0",
        "objective.metric=tokens.prompt.mean",
        "dataset=jsonl",
        "sim.call_roles=choice([assistant],[user])",
        f"dataset.path={SAMPLE}",
        f"hydra.sweep.dir={sweep}",
        NO_FIGURES,
    )
    assert status == 0, err
    result = yaml.safe_load((sweep / "optimization_results.yaml").read_text())
    values = [json.loads((p / "metrics.json").read_text())["tokens.prompt.mean"] for p in sorted(sweep.glob("[0-9]*"))]
    assert result["best_value"] == min(values)
    assert (sweep / "comparison.csv").is_file()


@pytest.mark.filterwarnings("ignore:The ``declarative_base")
@pytest.mark.parametrize("asked", ["sim.stop_after_session=1", "sim.resume=true"])
def test_an_optuna_search_that_would_stop_or_resume_is_refused(
    optuna_sweep: Path, tmp_path: Path, memlab_run_err: Callable[..., tuple[int, str]], asked: str
) -> None:
    """A stopped trial was recorded as the worst value, so the resumed search drew other trials than the stopped
    one's and resumed none of its checkpoints (they ran from the start)."""
    sweep = optuna_sweep
    status, err = memlab_run_err(
        "-m",
        "hydra/sweeper=optuna",
        "hydra.sweeper.n_trials=2",
        "dataset=jsonl",
        f"dataset.path={SAMPLE}",
        "store=sqlite",
        f"store.path={tmp_path / 'db.sqlite'}",
        "sim.call_roles=choice([assistant],[user])",
        asked,
        f"hydra.sweep.dir={sweep}",
        NO_FIGURES,
    )
    key = asked.split("=")[0]
    assert status == 2 and err.startswith(f"memlab: error: {key} in a search (hydra_plugins."), err
    assert not sweep.exists()  # refused before any trial ran


def test_each_job_is_composed_once_into_the_config_hydra_composes_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, memlab_run_err: Callable[..., tuple[int, str]]
) -> None:
    """The basic launcher takes the configs the sweeper composed to check the batch (`cli._jobs_composed_once`):
    each job's config, its `hydra` node included, is the text Hydra's second compose gives; one compose a job
    fewer; Hydra's methods are its own again after the command."""
    import contextlib

    from hydra._internal.config_loader_impl import ConfigLoaderImpl
    from hydra._internal.core_plugins import basic_launcher
    from hydra.core import utils
    from hydra.plugins.sweeper import Sweeper
    from omegaconf import OmegaConf

    from memlab import cli

    hydras = (Sweeper.validate_batch_is_legal, ConfigLoaderImpl.load_sweep_config)
    composes, jobs = [], []
    load, run_job = ConfigLoaderImpl.load_configuration, utils.run_job

    def counted(self: ConfigLoaderImpl, *args: Any, **kwargs: Any) -> DictConfig:
        composes.append(1)
        return load(self, *args, **kwargs)

    def recorded(*, config: DictConfig, **kwargs: Any) -> Any:
        jobs.append(OmegaConf.to_yaml(config))  # what the launcher hands the job, before the job sets its folder
        return run_job(config=config, **kwargs)

    monkeypatch.setattr(ConfigLoaderImpl, "load_configuration", counted)
    monkeypatch.setattr(utils, "run_job", recorded)  # where Hydra's plugin scan, which runs the module again, finds it
    monkeypatch.setattr(basic_launcher, "run_job", recorded)

    def sweep(name: str) -> tuple[int, list[str]]:
        composes.clear(), jobs.clear()
        out = tmp_path / name
        status, err = memlab_run_err("-m", *TINY, "context=none,trim", f"hydra.sweep.dir={out}")
        assert status == 0, err
        return len(composes), [job.replace(str(out), "SWEEP") for job in jobs]

    once = sweep("once")
    assert (Sweeper.validate_batch_is_legal, ConfigLoaderImpl.load_sweep_config) == hydras  # the patch did not leak
    monkeypatch.setattr(cli, "_jobs_composed_once", contextlib.nullcontext)
    twice = sweep("twice")
    assert len(once[1]) == 2 and once[1] == twice[1]
    assert once[0] == twice[0] - 2  # Hydra's mode probe, the sweep's config, then each job once (not twice)
