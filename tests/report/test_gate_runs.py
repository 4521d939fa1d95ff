"""The gate on real runs: unchanged runs never fail it, while a small real change always does.

Four runs of one configuration (long-term memory on, so recall@10 and the retrieval and extraction
latencies are there) are compared pairwise: 0 failures, and no latency reported as new against a
committed baseline. A 0.01 drop of recall@10, a run whose every call is one token longer (a system
prompt one token longer, in the shipped JSONL sample) and +500 tokens on a directionless total each fail it.
"""

from __future__ import annotations

import itertools
import json
import re
import shutil
from pathlib import Path

import pandas as pd
import pytest
import yaml
from gate_cli import compare, compare_streams, edited_copy

import memlab

RUN = ("dataset.dialogues=1", "dataset.sessions=3", "longterm=chat", "sim.progress=false")
UNCHANGED = 4
SAMPLE = Path(__file__).resolve().parents[2] / "datasets" / "sample.jsonl"
PROMPT = "You are a helpful travel assistant."
LONGER_PROMPT = "You are a very helpful travel assistant."  # one o200k token more


# One worker runs this module under `--dist loadgroup`: `runs` is built once, not once per worker.
pytestmark = pytest.mark.xdist_group("gate_runs")


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Four unchanged runs (`0`..`3`); the shipped JSONL sample under a system prompt (`jsonl`) and one token longer."""
    root = tmp_path_factory.mktemp("gate_runs")
    out = {str(i): memlab.run(list(RUN), root / str(i)).run_dir for i in range(UNCHANGED)}
    for name, prompt in (("jsonl", PROMPT), ("longer", LONGER_PROMPT)):
        path = root / f"{name}.jsonl"
        path.write_text("".join(with_system_prompt(line, prompt) for line in SAMPLE.read_text().splitlines()))
        out[name] = memlab.run(["dataset=jsonl", f"dataset.path={path}"], root / name).run_dir
    return out


def with_system_prompt(line: str, prompt: str) -> str:
    """One JSONL line of the sample whose conversation opens with the system prompt `prompt`."""
    messages = [m for m in json.loads(line)["messages"] if m["role"] != "system"]
    return json.dumps({"messages": [{"role": "system", "content": prompt}, *messages]}) + "\n"


def test_unchanged_runs_compared_pairwise_never_fail(runs: dict[str, Path], capsys) -> None:
    unchanged = [runs[str(i)] for i in range(UNCHANGED)]
    codes = []
    for a, b in itertools.permutations(unchanged, 2):
        code, out = compare(capsys, a, b, "--all")
        codes.append(code)
        assert "relative to latency.reference_us" in out  # the latencies were compared, as ratios
        assert out.strip().splitlines()[-1].startswith("PASS") and " new" not in out
    assert codes == [0] * 12


def test_a_committed_baseline_lists_no_latency_as_new(runs: dict[str, Path], tmp_path: Path, capsys) -> None:
    baseline = tmp_path / "baseline.json"
    assert compare(capsys, baseline, runs["0"], "--update")[0] == 0
    code, out = compare(capsys, baseline, runs["1"])
    assert code == 0 and " new" not in out and out.startswith("PASS"), out


def test_a_recall_drop_of_one_hundredth_fails(runs: dict[str, Path], tmp_path: Path, capsys) -> None:
    recall = json.loads((runs["0"] / "metrics.json").read_text())["longterm.recall@10"]
    dropped = edited_copy(runs["1"], tmp_path / "dropped", "metrics.json", **{"longterm.recall@10": recall - 0.01})
    code, out = compare(capsys, runs["0"], dropped)
    row = next(line for line in out.splitlines() if "| longterm.recall@10 " in line)
    assert code == 1 and "REGRESSION" in row and re.search(r"\| -1 pp +\|$", row), row  # in the values' unit


def test_a_run_whose_every_call_is_one_token_longer_fails(runs: dict[str, Path], capsys) -> None:
    before = pd.read_csv(runs["jsonl"] / "calls.csv")["prompt_tokens"]
    after = pd.read_csv(runs["longer"] / "calls.csv")["prompt_tokens"]
    assert ((after - before) == 1).all()  # the premise, on the runs' own output
    code, out = compare(capsys, runs["jsonl"], runs["longer"])
    row = next(line for line in out.splitlines() if "| tokens.prompt.mean " in line)
    assert code == 1 and "REGRESSION" in row and "+1 " in row


def test_a_directionless_total_fails_on_any_change(runs: dict[str, Path], tmp_path: Path, capsys) -> None:
    total = json.loads((runs["0"] / "metrics.json").read_text())["tokens.full_history.total"]
    more = edited_copy(runs["1"], tmp_path / "more", "metrics.json", **{"tokens.full_history.total": total + 500})
    code, out = compare(capsys, runs["0"], more)
    assert code == 1 and "| tokens.full_history.total " in out and "CHANGED" in out


def test_compare_warns_when_the_sides_replayed_other_data_or_counted_with_another_tokenizer(
    runs: dict[str, Path], tmp_path: Path, capsys
) -> None:
    """The defect: `memlab report` flagged runs of different data, `memlab compare` said nothing of it, nor against
    a baseline file (it recorded none of it)."""
    code, _, err = compare_streams(capsys, runs["0"], runs["1"])
    assert code == 0 and err == ""  # same data, same tokenizer
    err = compare_streams(capsys, runs["jsonl"], runs["longer"])[2]  # two datasets: the system prompt one token longer
    said = "memlab: WARNING: the sides replayed different data (manifest.json's data_sha256"
    assert err.startswith(said) and "so their metrics differ by it as well as by the change" in err, err
    other = tmp_path / "other"
    shutil.copytree(runs["1"], other)
    config = yaml.safe_load((other / "config.yaml").read_text())
    config["tokenizer"] = config["pricing"]["model"] = "gpt-4"
    (other / "config.yaml").write_text(yaml.safe_dump(config))
    code, out = compare(capsys, runs["0"], other / "metrics.json", "--format", "json")
    warnings = json.loads(out)["warnings"]
    assert code == 0 and [w.split(" (")[0] for w in warnings] == [
        "the sides counted tokens with different tokenizers",
        "the sides priced tokens at different models",
    ], warnings
    assert "gpt-4o-mini in the baseline, gpt-4 in the candidate" in warnings[0]
    baseline = tmp_path / "baseline.json"  # a baseline JSON records what its run replayed and counted with
    assert compare(capsys, baseline, runs["0"], "--update")[0] == 0
    assert compare_streams(capsys, baseline, runs["1"])[2] == ""
    err = compare_streams(capsys, baseline, other)[2]  # it warned of nothing: the file held metrics only
    assert "different tokenizers" in err and "gpt-4o-mini in the baseline, gpt-4 in the candidate" in err, err
    data = json.loads(baseline.read_text())  # one written before it recorded any: nothing to compare
    del data["provenance"]
    baseline.write_text(json.dumps(data))
    assert "WARNING" not in compare_streams(capsys, baseline, other)[2]
