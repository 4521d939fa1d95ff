"""Every entry of every config group composes and instantiates; bad keys and types fail at start."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from hydra.utils import instantiate

from memlab.experiment import COMPONENT_GROUPS
from memlab.runtime import Component

CONF = Path(__file__).resolve().parents[1] / "memlab" / "conf"
# Groups whose entries need something outside the checkout (a corpus, a service, an API key) to build.
NEEDS_OUTSIDE = {("dataset", "locomo"), ("dataset", "tau_bench"), ("store", "postgres"), ("store", "mysql")}
GROUPS = ("dataset", "context", "memory", "agent_memory", "longterm", "llm", "embedder", "store")


def entries() -> list[tuple[str, str]]:
    return [(g, p.stem) for g in GROUPS if (CONF / g).is_dir() for p in sorted((CONF / g).glob("*.yaml"))]


@pytest.mark.parametrize(("group", "name"), entries())
def test_entry_composes_and_validates(make_config, group: str, name: str) -> None:
    cfg = make_config(f"{group}={name}")
    node = cfg[group]
    assert node is not None and "_target_" in node, f"{group}/{name}.yaml has no _target_"


@pytest.mark.parametrize(("group", "name"), [e for e in entries() if e[0] in COMPONENT_GROUPS])
def test_component_entries_build_components(make_config, group: str, name: str) -> None:
    cfg = make_config(f"{group}={name}")
    assert isinstance(instantiate(cfg[group]), Component)


def _run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "memlab", "run", *args], cwd=cwd, capture_output=True, text=True)


def test_unknown_key_fails_at_start_naming_it(tmp_path: Path) -> None:
    out = _run("seeed=1", f"output_dir={tmp_path / 'run'}", cwd=tmp_path)
    assert out.returncode != 0
    assert "seeed" in out.stderr
    assert not (tmp_path / "run").exists()


def test_wrong_type_fails_at_start_naming_the_key(tmp_path: Path) -> None:
    out = _run("seed=abc", f"output_dir={tmp_path / 'run'}", cwd=tmp_path)
    assert out.returncode != 0
    assert "seed" in out.stderr and "abc" in out.stderr
    assert not (tmp_path / "run").exists()


def test_cli_works_outside_the_checkout(tmp_path: Path) -> None:
    out = _run(f"output_dir={tmp_path / 'run'}", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert (tmp_path / "run" / "metrics.json").is_file()
