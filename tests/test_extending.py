"""docs/extending.md, followed as written: a team's own repository outside the package, and the walkthroughs
that add a context strategy, a memory strategy and a dataset loader (one module and one YAML each) and a
metric (one module and its registry line) to memlab itself.

The team's repository (the blocks that open with a ``# my-team/...`` path) is written into a folder outside
the checkout and the doc's commands run there as written: the `$ ` lines, then the GitHub Actions job's `run`
steps (the GitLab job's script must be the same commands), whose gate passes on the committed baseline and
fails once the strategy's setting changes.

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
import tomllib
from pathlib import Path

import yaml

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
# The registry's check of what real runs write, on one run: the new metric is a context metric every run with
# calls writes, so the synthetic summaries run (a few seconds) fails it as the LoCoMo one would, unregistered.
REGISTRY_TESTS = [
    f"tests/metrics/test_registry.py::{name}"
    for name in ("test_every_metric_a_real_run_computes_is_registered[summaries]", "test_docs_table_is_the_registry")
]
COPIED = ("memlab", "conf", "tests", "docs", "datasets", "conftest.py", "pyproject.toml")
IGNORED = shutil.ignore_patterns("__pycache__", ".hypothesis")
# A team's files: code keeps its path comment (after Hydra's package header, which must come first), data does not.
TEAM_BLOCK = re.compile(
    r"^```(?:python|yaml)\n((?:# @package _global_\n)?# my-team/(\S+)\n.*?)^```|^```text\n# my-team/(\S+)\n(.*?)^```",
    re.S | re.M,
)
TEAM_COMMANDS = re.compile(r"^```console\n(.*?)^```", re.S | re.M)
GITHUB_JOB, GITLAB_JOB = ".github/workflows/memlab.yml", ".gitlab-ci.yml"


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

    # One pytest process for both: the generic tests picked by the entries' names, and the registry's tests.
    registry_names = [node.split("::")[1].split("[")[0] for node in REGISTRY_TESTS]
    names = " or ".join([name for _, name in ENTRIES] + registry_names)
    tests = sorted({f"tests/{t}" for files in GENERIC.values() for t in files})
    generic = subprocess.run(
        [sys.executable, "-m", "pytest", *tests, *REGISTRY_TESTS, "-k", names, "-p", "no:cacheprovider", "-q", "-rA"],
        cwd=tmp_path, env=env, capture_output=True, text=True,
    )  # fmt: skip
    assert generic.returncode == 0, generic.stdout[-3000:]
    passed = [line.split()[1] for line in generic.stdout.splitlines() if line.startswith("PASSED")]
    for group, name in ENTRIES:
        files = {p.split("::")[0].removeprefix("tests/") for p in passed if name in p}
        assert GENERIC[group] <= files, (group, name, generic.stdout[-3000:])
    for node in REGISTRY_TESTS:
        assert any(p == node or p.startswith(f"{node}[") for p in passed), (node, generic.stdout[-3000:])


def team_files() -> dict[str, str]:
    """{path in the team's repository: text} of the doc's first section."""
    blocks = TEAM_BLOCK.findall(DOC.read_text(encoding="utf-8"))
    return {code_path or data_path: code or rows for code, code_path, data_path, rows in blocks}


def team_commands() -> list[str]:
    """The doc's `$ ` command lines (run once to make the baseline)."""
    blocks = TEAM_COMMANDS.findall(DOC.read_text(encoding="utf-8"))
    return [line.removeprefix("$ ") for block in blocks for line in block.splitlines() if line.startswith("$ ")]


def ci_commands(files: dict[str, str]) -> list[str]:
    """The GitHub Actions job's `run` steps, checked to be the GitLab job's script."""
    (github,) = yaml.safe_load(files[GITHUB_JOB])["jobs"].values()
    (gitlab,) = yaml.safe_load(files[GITLAB_JOB]).values()
    runs = [step["run"] for step in github["steps"] if "run" in step]
    assert runs == gitlab["script"], "the two CI jobs run the same commands"
    return runs


def _shell(command: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """`command` as the CI job's shell runs it; `pip install` lines are checked, not run (memlab is installed)."""
    words = shlex.split(command)
    if words[:2] == ["pip", "install"]:
        extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
        for spec in words[2:]:
            name, _, extra = spec.partition("[")
            assert name == "memlab" and (not extra or extra.rstrip("]") in extras), spec
        return subprocess.CompletedProcess(words, 0, "", "")
    return subprocess.run(["bash", "-c", command], cwd=cwd, env=env, capture_output=True, text=True)


def test_a_teams_own_repository_outside_the_checkout_runs_its_strategy_experiment_and_gate(tmp_path: Path) -> None:
    repo = tmp_path / "my-team"
    assert ROOT not in repo.parents
    files = team_files()
    assert {"team_memory/strategies.py", "conf/context/user_turns.yaml", "conf/experiment/team.yaml"} <= set(files)
    assert {"data/support_logs.jsonl", GITHUB_JOB, GITLAB_JOB} <= set(files)
    for path, text in files.items():
        (repo / path).parent.mkdir(parents=True, exist_ok=True)
        (repo / path).write_text(text, encoding="utf-8")
    # The installed memlab on PATH, as in CI; nothing of the checkout on the import path.
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env['PATH']}"

    for command in team_commands():
        done = _shell(command, repo, env)
        assert done.returncode == 0, (command, done.stderr[-3000:])
    baseline = json.loads((repo / "baselines" / "team.json").read_text())
    assert len(baseline["runs"]) == 3
    sweep = repo / "reports" / "team"
    used = [yaml.safe_load((job / "config.yaml").read_text())["context"] for job in sorted(sweep.glob("[0-9]*"))]
    assert "team_memory.strategies.UserTurnsAndTail" in [(c.get("strategy") or {}).get("_target_") for c in used]

    def gate() -> tuple[int, str]:
        shutil.rmtree(sweep)  # a fresh CI checkout
        *setup, compare = ci_commands(files)
        for command in setup:
            done = _shell(command, repo, env)
            assert done.returncode == 0, (command, done.stderr[-3000:])
        done = _shell(compare, repo, env)
        return done.returncode, (repo / "reports" / "memlab-junit.xml").read_text()

    status, junit = gate()
    assert status == 0 and 'failures="0"' in junit
    entry = repo / "conf" / "context" / "user_turns.yaml"
    entry.write_text(entry.read_text().replace("keep_last: 4", "keep_last: 8"))  # sends more of each history
    status, junit = gate()
    assert status == 1
    assert re.search(r'<testcase classname="context=user_turns" name="tokens.prompt.mean">\s*<failure', junit), junit
    assert re.search(r'<testsuite name="context=trim" tests="\d+" failures="0"', junit), "only our strategy moved"
