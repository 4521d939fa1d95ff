"""docs/extending.md's walkthroughs, followed as written: a context strategy, a memory strategy and a
dataset loader are one module and one YAML each, a metric one module and its registry line.

The doc's files (its code blocks that open with a `# memlab/...` or `# datasets/...` path) are written
into a copy of the checkout (package, tests, docs, sample data), the registry line (the block that
opens with `# in memlab/metrics/registry.py`) added where the doc says and the doc's command for the
metric table run; there `memlab run` runs the new entries and the new metric, and the generic tests
and the registry's, unedited, test them.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "extending.md"
# Code under memlab/ or conf/ in python and yaml blocks (the schema sketches are text), data under datasets/ in text.
FILE_BLOCK = re.compile(
    r"^```(?:python|yaml)\n# ((?:memlab|conf)/\S+)\n(.*?)^```|^```text\n# (datasets/\S+)\n(.*?)^```", re.S | re.M
)
REGISTRY = "memlab/metrics/registry.py"
REGISTRY_BLOCK = re.compile(rf"^```python\n# in {REGISTRY}\n(.*?)^```", re.S | re.M)
TABLE_COMMAND = re.compile(r"^```bash\n(python -m memlab\.metrics .*)\n```", re.M)
# Each walkthrough's entry (group, name) and the generic tests that iterate over that group's entries.
ENTRIES = {("context", "last_turns"), ("memory", "recent_turns"), ("dataset", "transcript")}
GENERIC = {
    "context": {"test_contracts.py", "test_config.py", "context/test_protocol.py", "context/test_dict_io.py"}
    | {"context/test_interceptor.py"},
    "memory": {"test_contracts.py", "test_config.py"},
    "dataset": {"test_contracts.py", "test_config.py"},
}
METRIC = "context.kept_messages.share"
REGISTRY_TESTS = [
    f"tests/metrics/test_registry.py::{name}"
    for name in ("test_every_metric_a_real_run_computes_is_registered", "test_docs_table_is_the_registry")
]
COPIED = ("memlab", "conf", "tests", "docs", "datasets", "conftest.py", "pyproject.toml")
IGNORED = shutil.ignore_patterns("__pycache__", ".hypothesis")


def walkthrough_files() -> dict[str, str]:
    """{path: text} of the files the walkthroughs add (a code file keeps its path comment, data does not)."""
    blocks = FILE_BLOCK.findall(DOC.read_text(encoding="utf-8"))
    return {code or data: f"# {code}\n{body}" if code else rows for code, body, data, rows in blocks}


def registry_line() -> str:
    """The one line the metric walkthrough adds to the registry: its `METRICS` row."""
    (block,) = REGISTRY_BLOCK.findall(DOC.read_text(encoding="utf-8"))
    (row,) = block.splitlines()
    return row


def with_registry_line(source: str, row: str) -> str:
    """`source` (registry.py) with `row` after the last `METRICS` row of its section, as the doc places it."""
    section = re.search(r", (S_[A-Z]+), ", row)
    assert section, row
    last = max(m.end() for m in re.finditer(rf"^    Metric\(.*, {section[1]}, .*\n", source, re.M))
    return source[:last] + row + "\n" + source[last:]


def table_command() -> list[str]:
    """The doc's command that rewrites docs/evaluation.md's metric table, run by this interpreter."""
    (command,) = TABLE_COMMAND.findall(DOC.read_text(encoding="utf-8"))
    program, *args = shlex.split(command)
    assert program == "python", command
    return [sys.executable, *args]


def test_each_walkthrough_adds_one_module_and_one_yaml() -> None:
    assert sorted(walkthrough_files()) == [
        "conf/context/last_turns.yaml",
        "conf/dataset/transcript.yaml",
        "conf/memory/recent_turns.yaml",
        "datasets/transcript.txt",  # the toy loader's data, not code
        "memlab/context/last_turns.py",
        "memlab/dialogues/transcript.py",
        "memlab/memory/recent_turns.py",
        "memlab/metrics/kept_messages.py",
    ]
    assert registry_line().lstrip().startswith("Metric(")


def _memlab(tmp_path: Path, env: dict[str, str], run: str, *overrides: str) -> dict[str, float]:
    done = subprocess.run(
        [sys.executable, "-m", "memlab", "run", *overrides, "debug=default", f"output_dir={tmp_path / run}"],
        cwd=tmp_path, env=env, capture_output=True, text=True,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    return dict(json.loads((tmp_path / run / "metrics.json").read_text()))


def test_the_new_entries_run_and_the_generic_tests_pick_them_up(tmp_path: Path, shared_corpora: Path) -> None:
    for tree in COPIED:
        copy = shutil.copytree if (ROOT / tree).is_dir() else shutil.copy
        copy(ROOT / tree, tmp_path / tree, **({"ignore": IGNORED} if copy is shutil.copytree else {}))
    (tmp_path / "memlab" / "conf").symlink_to("../conf")  # where the wheel installs conf/ (package memlab.conf)
    for path, text in walkthrough_files().items():
        (tmp_path / path).write_text(text, encoding="utf-8")
    registry = tmp_path / REGISTRY
    registry.write_text(with_registry_line(registry.read_text(encoding="utf-8"), registry_line()), encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(tmp_path), "MEMLAB_SHARED": str(shared_corpora)}
    table = subprocess.run(table_command(), cwd=tmp_path, env=env, capture_output=True, text=True)
    assert table.returncode == 0, table.stderr
    assert METRIC in (tmp_path / "docs" / "evaluation.md").read_text(encoding="utf-8")

    cut = _memlab(tmp_path, env, "cut", "context=last_turns", "memory=recent_turns")
    assert cut["tokens.saved_ratio"] > 0, "the new strategies cut the requests"
    assert 0 < cut[METRIC] < 1, "the new metric is written"
    loaded = _memlab(tmp_path, env, "loaded", "dataset=transcript")
    assert loaded["calls"] == 2, "debug=default: the first dialogue of datasets/transcript.txt, one call per reply"

    names = " or ".join(name for _, name in ENTRIES)
    tests = sorted({f"tests/{t}" for files in GENERIC.values() for t in files})
    generic = subprocess.run(
        [sys.executable, "-m", "pytest", *tests, "-k", names, "-p", "no:cacheprovider", "-q", "-rA"],
        cwd=tmp_path, env=env, capture_output=True, text=True,
    )  # fmt: skip
    assert generic.returncode == 0, generic.stdout[-3000:]
    passed = [line.split()[1] for line in generic.stdout.splitlines() if line.startswith("PASSED")]
    for group, name in ENTRIES:
        files = {p.split("::")[0].removeprefix("tests/") for p in passed if name in p}
        assert GENERIC[group] <= files, (group, name, generic.stdout[-3000:])

    registered = subprocess.run(
        [sys.executable, "-m", "pytest", *REGISTRY_TESTS, "-p", "no:cacheprovider", "-q"],
        cwd=tmp_path, env=env, capture_output=True, text=True,
    )  # fmt: skip
    assert registered.returncode == 0, registered.stdout[-3000:]
