"""Print the extractive answer baseline on LoCoMo questions, judged by the extractive judge (docs/backends.md).

    python experiments/extractive_qa.py [path/to/locomo_dev7.json]

Each question (categories 1-4) is asked over its whole conversation through the real prompts; the
figures are the share answered from an evidence turn and the share the token-overlap judge calls CORRECT.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from memlab.llm import TASK_ANSWER, TASK_JUDGE, ExtractiveChatModel, prompts
from memlab.messages import Message

SHARED = Path(os.environ.get("MEMLAB_SHARED", Path(__file__).resolve().parents[2] / "shared"))
DEFAULT = SHARED / "datasets" / "locomo" / "locomo_dev7.json"


def main(path: Path) -> None:
    model = ExtractiveChatModel()
    asked = from_evidence = correct = 0
    for sample in json.loads(path.read_text(encoding="utf-8")):
        turns = [
            t
            for key, v in sample["conversation"].items()
            if key.startswith("session_") and isinstance(v, list)
            for t in v
        ]
        transcript = prompts.render_transcript(
            [Message(role="user", content=t["text"], id=t["dia_id"], speaker=t["speaker"]) for t in turns]
        )
        text_of = {t["dia_id"]: t["text"] for t in turns}
        for qa in sample["qa"]:
            if qa.get("category") == 5 or not qa.get("evidence"):
                continue
            asked += 1
            answer = model.complete(prompts.build(TASK_ANSWER, transcript, question=qa["question"]), task=TASK_ANSWER)
            from_evidence += bool(answer.text) and any(answer.text in text_of.get(e, "") for e in qa["evidence"])
            verdict = model.complete(
                prompts.judge_prompt(qa["question"], str(qa["answer"]), answer.text), task=TASK_JUDGE
            )
            correct += verdict.text == "CORRECT"
    print("| questions | answered from an evidence turn | judged CORRECT |")
    print("|---|---|---|")
    print(f"| {asked} | {from_evidence / asked:.3f} | {correct / asked:.3f} |")


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT)
