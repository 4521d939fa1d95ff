"""A run's manifest says which commit it ran and whether the checkout was modified (and how)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from memlab import experiment
from memlab.experiment import run_experiment
from memlab.rundir import git_state

SAMPLE = Path(__file__).parents[1] / "datasets/sample.jsonl"


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, text=True).stdout.strip()


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A real git checkout with one committed file and an ignored folder."""
    root = tmp_path / "checkout"
    root.mkdir()
    _git(root, "init", "-q")
    (root / "code.py").write_text("ANSWER = 1\n")
    (root / ".gitignore").write_text("reports/\n")
    _git(root, "add", ".")
    _git(root, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "first")
    return root


def test_a_clean_checkout_is_not_dirty(repo: Path) -> None:
    (repo / "reports").mkdir()
    (repo / "reports" / "run.json").write_text("{}")  # ignored: a run's output does not dirty the tree
    assert git_state(repo) == {"git_revision": _git(repo, "rev-parse", "HEAD"), "dirty": False, "diff_sha256": None}


def test_each_modification_is_dirty_with_its_own_hash(repo: Path) -> None:
    (repo / "code.py").write_text("ANSWER = 2\n")
    edited = git_state(repo)
    assert edited["dirty"] is True and len(edited["diff_sha256"]) == 64
    assert git_state(repo) == edited  # the same tree, the same hash
    (repo / "code.py").write_text("ANSWER = 3\n")
    assert git_state(repo)["diff_sha256"] != edited["diff_sha256"]
    (repo / "code.py").write_text("ANSWER = 1\n")
    (repo / "new.py").write_text("X = 1\n")  # an untracked file changes what runs too
    untracked = git_state(repo)
    assert untracked["dirty"] is True and untracked["diff_sha256"] not in (None, edited["diff_sha256"])


def test_outside_a_checkout_nothing_is_claimed(tmp_path: Path) -> None:
    assert git_state(tmp_path) == {"git_revision": None, "dirty": None, "diff_sha256": None}


def test_a_run_from_a_modified_checkout_records_it(
    repo: Path, make_config, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A real run whose source checkout (redirected to the temporary repository) has an uncommitted edit."""
    monkeypatch.setattr(experiment, "SOURCE", repo)
    cfg = make_config("dataset=jsonl", f"dataset.path={SAMPLE}")
    clean = json.loads((run_experiment(cfg, tmp_path / "clean").run_dir / "manifest.json").read_text())
    assert (clean["git_revision"], clean["dirty"]) == (_git(repo, "rev-parse", "HEAD"), False)
    (repo / "code.py").write_text("ANSWER = 2\n")
    manifest = json.loads((run_experiment(cfg, tmp_path / "dirty").run_dir / "manifest.json").read_text())
    assert manifest["dirty"] is True
    assert manifest["git_revision"] == clean["git_revision"]
    assert manifest["diff_sha256"] == git_state(repo)["diff_sha256"]
