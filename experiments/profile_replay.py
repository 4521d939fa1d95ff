"""cProfile a LoCoMo replay per context strategy and keep the top entries (`make profile`).

python experiments/profile_replay.py [path/to/locomo_dev7.json] [--dialogues N] [--top N]

Writes ``reports/profile/<strategy>.txt`` (the top entries by own time and by cumulative time)
and prints each strategy's wall time, so a slowdown is traced to a function in minutes.
One process (``sim.workers=1``), a fresh summary memo per strategy.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import os
import pstats
import tempfile
import time
from pathlib import Path

from memlab.api import compose
from memlab.experiment import run_experiment
from memlab.llm import extractive

SHARED = Path(os.environ.get("MEMLAB_SHARED", Path(__file__).resolve().parents[2] / "shared"))
DEFAULT = SHARED / "datasets" / "locomo" / "locomo_dev7.json"
CONTEXTS = ("none", "trim", "sliding_window", "summarize", "composite")
OUT = Path("reports/profile")


def profile(locomo: Path, context: str, dialogues: int, top: int) -> tuple[float, str]:
    """Wall seconds of one replay and its top profile entries."""
    cfg = compose(
        [
            "dataset=locomo",
            f"dataset.path={locomo}",
            f"dataset.max_dialogues={dialogues}",
            f"context={context}",
            "sim.workers=1",
            "sim.progress=false",
        ]
    )
    extractive.SUMMARY_MEMO.clear()
    profiler = cProfile.Profile()
    with tempfile.TemporaryDirectory() as tmp:
        start = time.perf_counter()
        profiler.runcall(run_experiment, cfg, Path(tmp) / "run")
        wall = time.perf_counter() - start
    text = io.StringIO()
    stats = pstats.Stats(profiler, stream=text)
    for order in ("tottime", "cumulative"):
        text.write(f"=== {context}: top {top} by {order} ===\n")
        stats.sort_stats(order).print_stats(top)
    return wall, text.getvalue()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("path", nargs="?", type=Path, default=DEFAULT)
    parser.add_argument("--dialogues", type=int, default=1)
    parser.add_argument("--top", type=int, default=25)
    args = parser.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    for context in CONTEXTS:
        wall, text = profile(args.path, context, args.dialogues, args.top)
        (OUT / f"{context}.txt").write_text(text, encoding="utf-8")
        print(f"{context}: {wall:.1f} s (profiled) -> {OUT / f'{context}.txt'}")


if __name__ == "__main__":
    main()
