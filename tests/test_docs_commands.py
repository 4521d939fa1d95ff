"""Every command shown in README.md and docs/*.md works as written, run on a tiny slice of the data.

The commands are read from the fenced ``bash`` blocks (and the untagged blocks of command lines);
placeholders (`/path/to/locomo10.json`, `DIR...`, `SWEEP_DIR`) are replaced by real files and
the outputs of earlier commands, and each `memlab run` gets `debug=default` (one dialogue, two
sessions). `memlab` commands run for real in a scratch directory, in this process (as the console
script calls `memlab.cli.main`), and a command shown in several places runs once. `make`, `pip` and
`pytest` lines are checked without recursing into them: the make target exists (`make -n`), the
extra exists in pyproject.toml, the test file collects.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shlex
import subprocess
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from entries import MINILM_ENTRIES

ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("MEMLAB_SHARED", ROOT.parent / "shared")) / "datasets"  # as tests/conftest.py
LOCOMO, TAU_BENCH = SHARED / "locomo" / "locomo_dev7.json", SHARED / "tau_bench" / "airline_gpt4o_dev150.json"
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.S | re.M)
PROGRAMS = ("memlab", "make", "pip", "pytest", "python")


def commands() -> list[tuple[str, str]]:
    """(where, command) for every command line of every fenced shell block in the docs."""
    found = []
    for doc in DOCS:
        text = doc.read_text(encoding="utf-8")
        for block in FENCE.finditer(text):
            if block.group(1) not in ("bash", "sh", "shell", ""):
                continue
            first = text[: block.start()].count("\n") + 2
            for i, line in enumerate(block.group(2).splitlines()):
                command = re.sub(r"\s+#.*$", "", line).strip()
                words = command.split()
                program = next((w for w in words if "=" not in w), "")  # after any VAR=value prefix
                if program in PROGRAMS:
                    found.append((f"{doc.relative_to(ROOT)}:{first + i}", command))
    return found


def distinct_commands() -> list[tuple[str, str]]:
    """(every place it is shown, command) for each command once; `[-o OUT]` is notation, not a difference."""
    places: dict[tuple[str, ...], list[str]] = {}
    shown: dict[tuple[str, ...], str] = {}
    for where, command in commands():
        key = tuple(shlex.split(command.replace("[-o OUT]", "")))
        places.setdefault(key, []).append(where)
        shown.setdefault(key, command)
    return [(",".join(places[key]), command) for key, command in shown.items()]


def _sweep(scratch: Path, memlab: Callable[..., int]) -> Path:
    """A small sweep, the `DIR` / `SWEEP_DIR` / `BASELINE CANDIDATE` of the report commands."""
    out = scratch / "sweep"
    if not (out / "comparison.csv").is_file():
        _memlab(memlab, "run", "-m", "context=trim,sliding_window", f"hydra.sweep.dir={out}", "debug=default")
    return out


def _memlab(memlab: Callable[..., int], *args: str) -> None:
    status = memlab(*args)
    assert status == 0, f"memlab {shlex.join(args)} -> {status} (its stderr is in the captured output)"


def _concrete(command: str, scratch: Path, memlab: Callable[..., int]) -> str:
    """The command with its placeholders replaced by real paths and values."""
    replacements = {
        "/path/to/locomo10.json": str(LOCOMO),
        "/path/to/trajectories.json": str(TAU_BENCH),
        "/path/to/logs.jsonl": str(ROOT / "datasets" / "sample.jsonl"),
        "[-o OUT]": "",
        "/tmp/ci": str(scratch / "ci"),
        "$PWD/db.sqlite": str(scratch / "db.sqlite"),  # what the shell would expand
        "-m hydra/launcher=joblib ...": "-m hydra/launcher=joblib context=trim,sliding_window",
    }
    for old, new in replacements.items():
        command = command.replace(old, new)
    if any(p in command for p in ("DIR", "BASELINE", "CANDIDATE")):
        sweep = str(_sweep(scratch, memlab))
        command = re.sub(r"\bSWEEP_DIR\b|\bDIR\.\.\.|\bBASELINE\b|\bCANDIDATE\b", sweep, command)
    return command


def _check_other(program: str, words: list[str]) -> None:
    if program == "make":
        done = subprocess.run(["make", "-n", *words[1:]], cwd=ROOT, capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
    elif program == "pip":
        extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
        for spec in words[2:]:
            extra = re.fullmatch(r"memlab\[(\w+)\]", spec)
            assert extra and extra.group(1) in extras, f"{spec}: no such extra in pyproject.toml"
    elif program == "pytest":
        paths = [w for w in words[1:] if w.startswith("tests/")]
        assert paths and all((ROOT / p.split("::")[0]).is_file() for p in paths), words
    elif program == "python" and words[1] == "-m":  # a module to run: it exists, and a package has a __main__
        spec = importlib.util.find_spec(words[2])
        assert spec is not None, words
        assert not spec.submodule_search_locations or importlib.util.find_spec(f"{words[2]}.__main__"), words
    elif program == "python":
        assert (ROOT / words[1]).is_file(), words


@pytest.mark.slow
def cases() -> list[Any]:
    """`distinct_commands` as parameters named by their places; one that selects an entry loading all-MiniLM-L6-v2
    (`entries.MINILM_ENTRIES`) joins the `minilm` xdist group, so that one worker loads the model."""
    minilm = [pytest.mark.xdist_group("minilm")]
    loads = [f"{group}={name}" for group, name in MINILM_ENTRIES]
    return [
        pytest.param(where, c, id=where, marks=minilm if any(e in c.split() for e in loads) else ())
        for where, c in distinct_commands()
    ]


@pytest.mark.parametrize(("where", "command"), cases())
def test_documented_command_works(
    where: str,
    command: str,
    tmp_path_factory: pytest.TempPathFactory,
    monkeypatch: pytest.MonkeyPatch,
    memlab_cli: Callable[..., int],
) -> None:
    scratch = tmp_path_factory.getbasetemp() / "docs-commands"
    scratch.mkdir(exist_ok=True)
    monkeypatch.chdir(scratch)
    for part in _concrete(command, scratch, memlab_cli).split("&&"):
        words = shlex.split(part)
        while words and "=" in words[0]:
            name, _, value = words.pop(0).partition("=")
            monkeypatch.setenv(name, value)
        program = words[0]
        if program != "memlab":
            _check_other(program, words)
            continue
        args = words[1:]
        if args[0] == "ablate" and not LOCOMO.exists():  # its default data: conf/ablate.yaml
            pytest.skip(f"corpus not found at {LOCOMO}")
        if args[0] in ("run", "ablate"):  # ablate passes debug=default on to each of its runs
            if any(a.startswith(("dataset.path=", "+experiment/ci")) or "experiment=ci" in a for a in args):
                for corpus in (LOCOMO, TAU_BENCH):
                    if str(corpus) in part and not corpus.exists():
                        pytest.skip(f"corpus not found at {corpus}")
            if not any(a.startswith("debug=") for a in args):
                args.append("debug=default")
        _memlab(memlab_cli, *args)


def test_the_docs_show_commands() -> None:
    """The extraction finds the README's commands (an empty list would pass vacuously)."""
    shown = [c for _, c in commands()]
    assert "memlab run -m context=trim,sliding_window,composite context.max_tokens=1000,4000" in shown
    assert len(shown) > 30
