"""`memlab run --help` lists the groups, and an entry's keys; bash completion works for `memlab run con<TAB>`."""

from __future__ import annotations

import dataclasses
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from in_process import memlab_main

from memlab.cli import GROUP_HELP, INTERNAL_GROUPS, run_help
from memlab.config import SimConfig, schema_classes
from memlab.config_help import field_docs
from memlab.context.schemas import ContextKnobs, TrimConfig, TrimContextConfig

CONF = Path(__file__).resolve().parents[1] / "conf"
BIN = Path(sys.executable).parent


def test_every_group_folder_is_described_or_internal() -> None:
    folders = {p.name for p in CONF.iterdir() if p.is_dir() and not p.name.startswith("_")}
    assert folders == set(GROUP_HELP) | (folders & set(INTERNAL_GROUPS))


def _help(capsys: pytest.CaptureFixture[str], memlab_cli: Callable[..., int], *args: str) -> str:
    """What `memlab run --help ARGS` prints, run in this process (tests/in_process.py): the text, not the process,
    is checked here; `test_run_help_of_a_section_and_of_a_wrong_entry` runs the command as a process."""
    capsys.readouterr()
    assert memlab_cli("run", "--help", *args) == 0
    return capsys.readouterr().out


def test_run_help_has_one_line_per_user_facing_group(
    capsys: pytest.CaptureFixture[str], memlab_cli: Callable[..., int]
) -> None:
    out = _help(capsys, memlab_cli)
    assert out == run_help()
    group_lines = [ln for ln in out.splitlines() if ln.startswith("  ") and ln.split()[0] in GROUP_HELP]
    assert [ln.split()[0] for ln in group_lines] == list(GROUP_HELP)
    assert "schema" not in out and "compare " not in out and "tolerances" not in out
    assert "none*" in out.split("  context ", 1)[1].split("  memory ", 1)[0]  # the default entry is marked
    assert all(len(ln) <= 160 for ln in out.splitlines())


def test_run_help_of_an_entry_lists_its_keys_as_composed_with_their_docstrings(
    capsys: pytest.CaptureFixture[str], memlab_cli: Callable[..., int]
) -> None:
    """`memlab run --help context=trim`: each key's type, default (the YAML's wiring included), range and docstring."""
    out = _help(capsys, memlab_cli, "context=trim")
    lines = out.splitlines()
    # the schema's first line, its entry named once (the docstring begins "`context=trim` reads ...")
    assert lines[0] == "context=trim reads the knobs `context.keep_first` and `context.keep_last`."
    keep_last = lines.index("  context.keep_last: int | None = 3  (>= 0)")
    assert lines[keep_last + 1].strip() == field_docs(ContextKnobs)["keep_last"]
    assert "  context.strategy.keep_first: int = ${..keep_first}  (>= 0)" in lines  # nested by the defaults entry
    assert field_docs(TrimConfig)["placeholder"] in out and "_target_" not in out


def test_run_help_of_a_section_and_of_a_wrong_entry(
    capsys: pytest.CaptureFixture[str], memlab_cli: Callable[..., int]
) -> None:
    sim = _help(capsys, memlab_cli, "sim")
    assert "  sim.workers: int | None = null  (>= 1 and <= 1024)" in sim and field_docs(SimConfig)["workers"] in sim
    wrong = subprocess.run([BIN / "memlab", "run", "--help", "context=trimm"], capture_output=True, text=True)
    assert wrong.returncode == 2 and "Could not find 'context/trimm'" in wrong.stderr


def test_run_help_of_a_topic_the_config_does_not_have_is_an_error(
    capsys: pytest.CaptureFixture[str], memlab_cli: Callable[..., int]
) -> None:
    capsys.readouterr()
    assert memlab_cli("run", "--help", "bogus") == 2
    err = capsys.readouterr().err
    assert err.startswith("memlab: error: --help bogus: bogus is neither a config group nor a key; try a group (")
    assert _help(capsys, memlab_cli, "context.max_tokens") == "context.max_tokens: context.max_tokens is not set\n"


@pytest.mark.parametrize(
    ("flags", "said"),
    [
        (("-m", "--cfg", "hydra"), "Only one of --run, --multirun, --cfg, --info and --shell_completion can be"),
        (("--resolve",), "The --resolve flag can only be used in conjunction with --cfg or --help"),
    ],
)
def test_flags_hydra_refuses_together_are_one_line(
    capsys: pytest.CaptureFixture[str], memlab_cli: Callable[..., int], flags: tuple[str, ...], said: str
) -> None:
    capsys.readouterr()
    assert memlab_cli("run", *flags) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"memlab: error: {said}") and err.count("\n") == 1, err


def test_field_docs_read_attribute_docstrings_of_a_class_and_its_bases() -> None:
    assert field_docs(SimConfig)["max_tool_rounds"] == "Tool rounds a ReAct iteration may run before the reply."
    assert set(field_docs(TrimContextConfig)) >= {"max_tokens", "keep_first", "keep_last", "threshold", "strategy"}


def test_every_schema_field_has_a_docstring_for_the_help() -> None:
    """A key `memlab run --help GROUP=ENTRY` lists is explained: each field has its docstring (not `_target_`)."""
    undocumented = [
        f"{cls.__module__}.{cls.__name__}.{f.name}"
        for cls in schema_classes()
        for f in dataclasses.fields(cls)
        if not f.name.startswith("_") and f.name not in field_docs(cls)
    ]
    assert undocumented == []


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, dict[str, str], Path]:
    """`memlab run -sc install=bash` run once for the module: (the script, its environment, its folder).

    The key tree a TAB reads is this module's own (XDG_CACHE_HOME); installing it again per command line
    would only repeat the same process.
    """
    if shutil.which("bash") is None:
        pytest.skip("bash is not installed")
    folder = tmp_path_factory.mktemp("completion")
    cache = {**os.environ, "XDG_CACHE_HOME": str(folder / "cache")}
    script = subprocess.run(
        [BIN / "memlab", "run", "-sc", "install=bash"],
        capture_output=True,
        text=True,
        check=True,
        cwd=folder,
        env=cache,
    ).stdout
    return script, cache, folder


def _complete(line: str, installed: tuple[str, dict[str, str], Path]) -> list[str]:
    """COMPREPLY of the installed bash completion for the command line `line` (cursor at its end)."""
    script, cache, folder = installed
    words = line.split() + ([""] if line.endswith(" ") else [])
    quoted = " ".join(f"'{w}'" for w in words)
    probe = f"""
{script}
COMP_LINE='{line}'; COMP_POINT={len(line)}; COMP_WORDS=({quoted}); COMP_CWORD={len(words) - 1}
hydra_bash_completion
printf '%s\\n' "${{COMPREPLY[@]}}"
"""
    env = {**cache, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}"}
    done = subprocess.run(["bash", "-c", probe], capture_output=True, text=True, env=env, cwd=folder, timeout=120)
    assert done.returncode == 0, done.stderr
    return [w for w in done.stdout.splitlines() if w]


@pytest.mark.xdist_group("bash_completion")  # one worker, one install (`installed`)
def test_bash_completes_run_overrides(installed: tuple[str, dict[str, str], Path]) -> None:
    assert set(_complete("memlab run con", installed)) == {"context.", "context=", "context_window="}
    assert set(_complete("memlab run context=s", installed)) == {"context=sliding_window", "context=summarize"}


@pytest.mark.xdist_group("bash_completion")
def test_bash_completes_the_command(installed: tuple[str, dict[str, str], Path]) -> None:
    assert set(_complete("memlab re", installed)) == {"report", "recommend"}


def test_hydra_help_copies_the_config_repository_once_and_leaves_hydra_as_it_was(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`memlab run --hydra-help` lists Hydra's groups from one repository copy; Hydra's method comes back after."""
    from hydra._internal.config_loader_impl import ConfigLoaderImpl

    hydras = ConfigLoaderImpl._parse_overrides_and_create_caching_repo
    copies: list[tuple[str | None, tuple[str, ...]]] = []

    def counted(self: ConfigLoaderImpl, config_name: str | None, overrides: list[str]) -> object:
        copies.append((config_name, tuple(overrides)))
        return hydras(self, config_name, overrides)

    monkeypatch.setattr(ConfigLoaderImpl, "_parse_overrides_and_create_caching_repo", counted)
    assert memlab_main("run", "--hydra-help") == 0
    out = capsys.readouterr().out
    assert "hydra/launcher: basic" in out and "hydra/sweeper: basic" in out
    assert len(copies) == len(set(copies)) == 1  # one copy, not one a listed group
    assert ConfigLoaderImpl._parse_overrides_and_create_caching_repo is counted  # the patch did not leak


def test_version_is_the_installed_distribution_s(capsys: pytest.CaptureFixture[str]) -> None:
    from importlib.metadata import version

    from memlab.cli import main

    for flag in ("--version", "-V"):
        main([flag])
        assert capsys.readouterr().out == f"memlab {version('memlab')}\n"
