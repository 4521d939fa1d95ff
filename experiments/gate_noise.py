"""How often `memlab compare` fails unchanged runs: one config run N times, each ordered pair compared.

python experiments/gate_noise.py OUT [--runs 4] [--load] [OVERRIDES...]

Each run is its own `memlab run` process; `--load` keeps a busy loop on one core while they run
(the other core of a 2-core machine, as a CI runner shares it). Prints, for the default gate and
for `--latency`, how many of the N x (N - 1) comparisons failed, and the largest latency ratio seen
(docs/evaluation.md). The default config: LoCoMo conv-26 with long-term memory and a sliding window;
OVERRIDES, given anywhere on the line, replace it (your own config, as `memlab run OVERRIDES` runs it).
"""

from __future__ import annotations

import argparse
import itertools
import json
import multiprocessing
import os
import re
import subprocess
import sys
from pathlib import Path

SHARED = Path(os.environ.get("MEMLAB_SHARED", Path(__file__).resolve().parents[2] / "shared"))
LOCOMO = SHARED / "datasets" / "locomo" / "locomo_dev7.json"
DEFAULT = ["dataset=locomo", f"dataset.path={LOCOMO}", "dataset.sample_ids=[conv-26]", "longterm=locomo"]
DEFAULT += ["context=sliding_window"]
RATIO = re.compile(r"^x([\d.]+) relative to")


def busy() -> None:
    while True:
        pass


def compare(a: Path, b: Path, *flags: str) -> tuple[int, float]:
    """Exit status of `memlab compare a b FLAGS` and the largest latency ratio it computed."""
    out = subprocess.run(
        [sys.executable, "-m", "memlab", "compare", str(a), str(b), "--format", "json", *flags],
        capture_output=True,
        text=True,
    )
    ratios = [float(m[1]) for row in json.loads(out.stdout)["rows"] if (m := RATIO.match(row["note"]))]
    return out.returncode, max(ratios, default=1.0)


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--runs", type=int, default=4)
    parser.add_argument("--load", action="store_true", help="a busy loop on one core while the runs replay")
    parser.add_argument("overrides", nargs="*", default=DEFAULT)
    args = parser.parse_intermixed_args(argv)  # OVERRIDES before or after the flags
    load = multiprocessing.Process(target=busy, daemon=True) if args.load else None
    if load:
        load.start()
    runs = [args.out / f"run{i}" for i in range(args.runs)]
    for run in runs:
        subprocess.run([sys.executable, "-m", "memlab", "run", *args.overrides, f"hydra.run.dir={run}"], check=True)
    if load:
        load.terminate()
    references = [json.loads((r / "latency.json").read_text())["latency.reference_us"] for r in runs]
    print(f"latency.reference_us over {len(runs)} runs: {min(references):,.0f} to {max(references):,.0f} us")
    for flags in ((), ("--latency",)):
        results = [compare(a, b, *flags) for a, b in itertools.permutations(runs, 2)]
        failed = sum(code != 0 for code, _ in results)
        print(
            f"memlab compare {' '.join(flags) or '(default)'}: {failed} of {len(results)} comparisons failed; ", end=""
        )
        print(f"largest latency ratio x{max(r for _, r in results):.2f}")


if __name__ == "__main__":
    main(sys.argv[1:])
