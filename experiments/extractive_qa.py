"""Print the extractive answer baseline on LoCoMo questions, judged by the extractive judge (docs/backends.md).

    python experiments/extractive_qa.py [path/to/locomo_dev7.json]

Each question (categories 1-4) is asked over its whole conversation through the real prompts; the
figures are the share answered from an evidence turn and the share the token-overlap judge calls CORRECT.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from memlab.dialogues import Dialogue, load_locomo
from memlab.errors import MemlabError
from memlab.eval import evaluate_answers
from memlab.llm import ExtractiveChatModel

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
    figures = evaluate_answers(corpus(), ExtractiveChatModel())
    print("| questions | answered from an evidence turn | judged CORRECT |")
    print("|---|---|---|")
    print(f"| {figures['questions']:.0f} | {figures['from_evidence']:.3f} | {figures['judged_correct']:.3f} |")
