"""experiments/update_eval.py (docs/longterm.md) prints what its runs wrote; a set of runs pools its questions."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def counted(runs: list[dict[str, float]], share: str, total: str) -> str:
    """``k / n (p%)`` pooled from each run's metrics.json: its share times its question count, summed."""
    n = sum(int(m[total]) for m in runs)
    k = sum(round(m[share] * m[total]) for m in runs)
    return f"{k} / {n} ({k / n:.1%})"


def test_the_table_pools_the_runs_metrics(tmp_path: Path) -> None:
    options = ["--sets", "dev,synthetic,misfire_dev", "--seeds", "21-22", "--runs", str(tmp_path)]
    done = subprocess.run(
        [sys.executable, str(ROOT / "experiments" / "update_eval.py"), *options, "sim.max_dialogues=1"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    rows = [line for line in done.stdout.splitlines() if line.startswith("|") and "---" not in line]

    def metrics(*folders: str) -> list[dict[str, float]]:
        return [json.loads((tmp_path / f / "metrics.json").read_text(encoding="utf-8")) for f in folders]

    def update_row(label: str, runs: list[dict[str, float]]) -> str:
        cells = [
            label,
            str(sum(int(m["longterm.update_probes"]) for m in runs)),
            counted(runs, "longterm.newer@1", "longterm.update_probes"),
            counted(runs, "longterm.older@1", "longterm.update_probes"),
            counted(runs, "longterm.newer_first", "longterm.newer_first.probes"),
            counted(runs, "longterm.newer_missed@10", "longterm.update_probes"),
        ]
        return f"| {' | '.join(cells)} |"

    misfires = metrics("misfire_dev")
    assert rows[1:3] == [
        update_row("dev", metrics("dev")),
        update_row("synthetic seeds 21-22", metrics("synthetic_21", "synthetic_22")),
    ]
    assert rows[4] == (
        f"| misfire_dev | 8 | {counted(misfires, 'longterm.decoy_answer@1', 'longterm.decoy_probes')} "
        f"| {counted(misfires, 'longterm.decoy_above', 'longterm.decoy_probes')} |"
    )
