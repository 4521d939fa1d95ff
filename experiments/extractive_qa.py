"""Print the extractive answer baseline on LoCoMo questions, judged by the extractive judge (docs/backends.md).

    python experiments/extractive_qa.py [path/to/locomo_dev7.json]

Each question (categories 1-4) is asked over its whole conversation through the real prompts; the
figures are the share answered from an evidence turn and the share the token-overlap judge calls CORRECT.
"""

from __future__ import annotations

from script_args import locomo_argument

from memlab.eval import evaluate_answers
from memlab.llm import ExtractiveChatModel

if __name__ == "__main__":
    figures = evaluate_answers(locomo_argument(__doc__.splitlines()[0]), ExtractiveChatModel())
    print("| questions | answered from an evidence turn | judged CORRECT |")
    print("|---|---|---|")
    print(f"| {figures['questions']:.0f} | {figures['from_evidence']:.3f} | {figures['judged_correct']:.3f} |")
