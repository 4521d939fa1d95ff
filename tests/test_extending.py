"""docs/extending.md's walkthrough, followed as written: a new context strategy is one module and one YAML.

The doc's files (its code blocks that open with a `# memlab/...` path) are written into a copy of the
checkout (package, tests, sample data); there `memlab run` runs the new entry, and the generic tests,
unedited, test it.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "extending.md"
FILE_BLOCK = re.compile(r"^```(?:python|yaml)\n# (memlab/\S+)\n(.*?)^```", re.S | re.M)
ENTRY = "last_turns"
COPIED = ("memlab", "tests", "datasets", "conftest.py", "pyproject.toml")
IGNORED = shutil.ignore_patterns("__pycache__", ".hypothesis")
# The generic tests that iterate over every context entry.
GENERIC = ("test_contracts.py", "test_config.py")
GENERIC += ("context/test_protocol.py", "context/test_dict_io.py", "context/test_interceptor.py")


def walkthrough_files() -> dict[str, str]:
    """{path: text} of the files the walkthrough adds."""
    return {path: f"# {path}\n{body}" for path, body in FILE_BLOCK.findall(DOC.read_text(encoding="utf-8"))}


def test_the_walkthrough_adds_one_module_and_one_yaml() -> None:
    assert sorted(walkthrough_files()) == [f"memlab/conf/context/{ENTRY}.yaml", f"memlab/context/{ENTRY}.py"]


def test_the_new_strategy_runs_and_the_generic_tests_pick_it_up(tmp_path: Path, shared_corpora: Path) -> None:
    for tree in COPIED:
        copy = shutil.copytree if (ROOT / tree).is_dir() else shutil.copy
        copy(ROOT / tree, tmp_path / tree, **({"ignore": IGNORED} if copy is shutil.copytree else {}))
    for path, text in walkthrough_files().items():
        (tmp_path / path).write_text(text, encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(tmp_path), "MEMLAB_SHARED": str(shared_corpora)}

    run = subprocess.run(
        [sys.executable, "-m", "memlab", "run", f"context={ENTRY}", "debug=default", f"output_dir={tmp_path / 'run'}"],
        cwd=tmp_path, env=env, capture_output=True, text=True,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr[-3000:]
    metrics = json.loads((tmp_path / "run" / "metrics.json").read_text())
    assert metrics["tokens.saved_ratio"] > 0, "the new strategy cut the requests"

    tests = [f"tests/{t}" for t in GENERIC]
    generic = subprocess.run(
        [sys.executable, "-m", "pytest", *tests, "-k", ENTRY, "-p", "no:cacheprovider", "-q", "-rA"],
        cwd=tmp_path, env=env, capture_output=True, text=True,
    )  # fmt: skip
    assert generic.returncode == 0, generic.stdout[-3000:]
    passed = [line.split()[1] for line in generic.stdout.splitlines() if line.startswith("PASSED")]
    assert {p.split("::")[0].removeprefix("tests/") for p in passed} == set(GENERIC), generic.stdout[-3000:]
