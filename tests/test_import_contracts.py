"""memlab's import contracts (pyproject.toml, `lint-imports`) hold, and a back-arrow breaks them."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")
# (file, line appended, the report line it must produce): the arrows issue 17 found, and one per other contract.
BACK_ARROWS = [
    ("runtime/__init__.py", "import memlab.config", "memlab.runtime is not allowed to import memlab.config"),
    ("tokens.py", "import memlab.llm.litellm_import", "memlab.tokens is not allowed to import memlab.llm"),
    ("dialogues/model.py", "import memlab.sim", "memlab.dialogues is not allowed to import memlab.sim"),
    ("metrics/tokens.py", "import memlab.report", "memlab.metrics is not allowed to import memlab.report"),
    ("context/trim.py", "import memlab.memory", "memlab.context is not allowed to import memlab.memory"),
    ("context/trim.py", "import memlab.longterm", "memlab.context is not allowed to import memlab.longterm"),
    ("sim/replay.py", "import memlab.context", "memlab.sim is not allowed to import memlab.context"),
    ("metrics/tokens.py", "import memlab.llm", "memlab.metrics is not allowed to import memlab.llm"),
    ("eval/retrieval.py", "import json", "memlab.eval is not allowed to import json"),
]


def lint_imports(root: Path) -> subprocess.CompletedProcess[str]:
    """`lint-imports` on the memlab package under `root`, with the contracts of its pyproject.toml."""
    env = {**os.environ, "PYTHONPATH": str(root)}
    return subprocess.run(
        [str(LINT_IMPORTS), "--no-cache", "--config", str(root / "pyproject.toml")],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def copy_package(root: Path) -> None:
    """memlab's modules and pyproject.toml under `root` (the experiment scripts the config tree links are left out)."""
    shutil.copytree(ROOT / "memlab", root / "memlab", ignore=shutil.ignore_patterns("__pycache__", "experiment"))
    shutil.copy(ROOT / "pyproject.toml", root)


def test_memlab_keeps_every_import_contract() -> None:
    done = lint_imports(ROOT)
    contracts = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"Contracts: {len(contracts)} kept, 0 broken." in done.stdout


def test_a_back_arrow_breaks_a_contract(tmp_path: Path) -> None:
    copy_package(tmp_path)
    for file, line, _ in BACK_ARROWS:
        with (tmp_path / "memlab" / file).open("a", encoding="utf-8") as f:
            f.write(f"\n{line}  # noqa\n")
    done = lint_imports(tmp_path)
    assert done.returncode == 1, done.stdout
    report = re.sub(r"\s+", " ", done.stdout)
    missing = [expected for _, _, expected in BACK_ARROWS if expected not in report]
    assert not missing, done.stdout


def test_a_module_outside_the_layers_breaks_the_exhaustive_contract(tmp_path: Path) -> None:
    copy_package(tmp_path)
    (tmp_path / "memlab" / "new_stage.py").write_text('"""A stage no layer names."""\n', encoding="utf-8")
    done = lint_imports(tmp_path)
    assert done.returncode == 1 and "memlab.new_stage" in done.stdout, done.stdout
