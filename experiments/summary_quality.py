"""Print the extractive summarizer's recall against LoCoMo's gold session summaries (docs/backends.md).

python experiments/summary_quality.py [path/to/locomo_dev7.json]
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from memlab.dialogues import Dialogue, load_locomo
from memlab.errors import MemlabError
from memlab.eval import evaluate_summaries

SHARED = Path(os.environ.get("MEMLAB_SHARED", Path(__file__).resolve().parents[2] / "shared"))
DEFAULT = SHARED / "datasets" / "locomo" / "locomo_dev7.json"


def corpus() -> list[Dialogue]:
    """The LoCoMo file the command line names (default: dev7), or a usage error naming what is wrong with it."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("path", nargs="?", type=Path, default=DEFAULT, help=f"a LoCoMo JSON file (default {DEFAULT})")
    path = parser.parse_args().path
    try:
        return load_locomo(path)
    except MemlabError as e:
        parser.error(str(e))


if __name__ == "__main__":
    figures = evaluate_summaries(corpus())
    print("| method | sessions | fact recall | ROUGE-1 recall | ROUGE-L recall | mean tokens |")
    print("|---|---|---|---|---|---|")
    for name, f in figures.items():
        print(
            f"| {name} | {f['sessions']:.0f} | {f['fact_recall']:.3f} | {f['rouge1_recall']:.3f} "
            f"| {f['rougeL_recall']:.3f} | {f['tokens']:.1f} |"
        )
