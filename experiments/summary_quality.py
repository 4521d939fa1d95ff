"""Print the extractive summarizer's recall against LoCoMo's gold session summaries (docs/backends.md).

python experiments/summary_quality.py [path/to/locomo_dev7.json]
"""

from __future__ import annotations

from script_args import locomo_argument

from memlab.eval import evaluate_summaries

if __name__ == "__main__":
    figures = evaluate_summaries(locomo_argument(__doc__.splitlines()[0]))
    print("| method | sessions | fact recall | ROUGE-1 recall | ROUGE-L recall | mean tokens |")
    print("|---|---|---|---|---|---|")
    for name, f in figures.items():
        print(
            f"| {name} | {f['sessions']:.0f} | {f['fact_recall']:.3f} | {f['rouge1_recall']:.3f} "
            f"| {f['rougeL_recall']:.3f} | {f['tokens']:.1f} |"
        )
