"""Print the extractive summarizer's recall against LoCoMo's gold session summaries (docs/backends.md).

python experiments/summary_quality.py [path/to/locomo_dev7.json]
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from memlab.dialogues import load_locomo
from memlab.eval import evaluate_summaries

SHARED = Path(os.environ.get("MEMLAB_SHARED", Path(__file__).resolve().parents[2] / "shared"))
DEFAULT = SHARED / "datasets" / "locomo" / "locomo_dev7.json"

if __name__ == "__main__":
    figures = evaluate_summaries(load_locomo(Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT))
    print("| method | sessions | fact recall | ROUGE-1 recall | ROUGE-L recall | mean tokens |")
    print("|---|---|---|---|---|---|")
    for name, f in figures.items():
        print(
            f"| {name} | {f['sessions']:.0f} | {f['fact_recall']:.3f} | {f['rouge1_recall']:.3f} "
            f"| {f['rougeL_recall']:.3f} | {f['tokens']:.1f} |"
        )
