"""Answer scores on hand cases with known values: LoCoMo's and mem0's scorers, the judge, the answer loop."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import pytest

from memlab.llm.base import TASK_ANSWER, Completion, RecordedChatModel
from memlab.messages import MessageLike, as_messages
from memlab.metrics.answers import answer_rows, judge_answer, locomo_f1, locomo_tokens, mem0_bleu1, mem0_f1
from memlab.trace import LLM_CALL, recording


def test_locomo_normalizes_drops_and_and_stems() -> None:
    assert locomo_tokens("The cats, AND a dog; running!") == ["cat", "dog", "run"]


def test_locomo_f1_per_category() -> None:
    # stemming makes "paintings" and "painting" one word
    assert locomo_f1("paintings", "painting", "single-hop") == 1.0
    # multi-hop: mean over gold parts of the best predicted part: Paris 1.0, Rome 1.0, Oslo 0.0
    assert locomo_f1("Paris, Rome", "Paris, Rome, Oslo", "multi-hop") == pytest.approx(2 / 3)
    # open-domain: only the gold's first ';' part counts
    assert locomo_f1("likely yes", "Likely yes; because she said so", "open-domain") == 1.0
    assert locomo_f1("likely yes", "Likely yes; because she said so", "temporal") < 1.0
    # adversarial: abstention phrases, never the gold (the trap answer is not gold)
    assert locomo_f1("No information available.", None, "adversarial") == 1.0
    assert locomo_f1("It is not mentioned.", "self-care", "adversarial") == 1.0
    assert locomo_f1("self-care is important", None, "adversarial") == 0.0
    assert locomo_f1("anything", None, "single-hop") is None


def test_mem0_f1_is_over_token_sets() -> None:
    # sets: {may, 2023} on both sides: P = R = 1
    assert mem0_f1("May may 2023.", "may, 2023") == 1.0
    # pred {in, may, 2023} vs gold {may, of, 2023}: 2 common, P = R = 2/3; no stemming
    assert mem0_f1("in May 2023", "May of 2023") == pytest.approx(2 / 3)
    assert mem0_f1("paintings", "painting") == 0.0
    assert mem0_f1("", "x") == 0.0
    assert mem0_f1("x", "x", "adversarial") is None


def test_mem0_bleu1_known_values() -> None:
    assert mem0_bleu1("The cat sat on the mat", "the cat sat on the mat") == 1.0
    # 2 of 2 unigrams match, candidate shorter than the 4-word reference: BP = exp(1 - 4/2)
    assert mem0_bleu1("cat sat", "cat sat on mat") == pytest.approx(math.exp(1 - 2))
    # punctuation is a token: "mat ." has 2 tokens, 1 matches, as long as the reference "mat now"
    assert mem0_bleu1("mat.", "mat now") == pytest.approx(0.5)
    assert mem0_bleu1("dog ran", "cat") == 0.0
    assert mem0_bleu1("x", "x", "adversarial") is None


class Scripted(RecordedChatModel):
    """A model that answers from a script, so the scoring around it is what is tested."""

    name = "scripted"

    def __init__(self, answers: dict[str, str]) -> None:
        self.answers = answers

    def _complete(
        self, messages: Sequence[MessageLike], *, task: str, max_tokens: int | None, **params: Any
    ) -> Completion:
        text = as_messages(messages)[-1].text
        reply = next((a for q, a in self.answers.items() if q in text), "")
        return Completion(reply, 10, 2, self.name)


def test_answer_rows_answer_from_the_context_and_score() -> None:
    # first matching key wins: the judge's prompt also contains the question
    model = Scripted({"Gold answer: Lisbon\nGenerated answer: Lisbon": "CORRECT", "Where": "Lisbon", "When": "in June"})
    model.answers["Trap"] = "That is not mentioned."
    rows = [
        {"question": "Where did they fly?", "answer": "Lisbon", "category": "single-hop"},
        {"question": "When?", "answer": "May 2023", "category": "temporal"},
        {"question": "Unknown?", "answer": None, "category": "single-hop"},
        {"question": "Trap?", "answer": None, "category": "adversarial"},
    ]
    with recording() as events:
        out = answer_rows(model, rows, ["ctx 1", "ctx 2", "ctx 3", "ctx 4"])
    assert out[0] == {
        "generated": "Lisbon",
        "answer.f1.locomo": 1.0,
        "answer.f1.mem0": 1.0,
        "answer.bleu1.mem0": 1.0,
        "answer.judge": 1.0,
    }
    assert out[1]["answer.f1.locomo"] == 0.0 and out[1]["answer.judge"] is None  # the judge said neither word
    assert out[2]["generated"] is None  # no gold answer and not adversarial: not asked
    # adversarial: asked, scored by LoCoMo's abstention check, skipped by mem0, not judged (no gold)
    assert out[3]["answer.f1.locomo"] == 1.0 and out[3]["answer.f1.mem0"] is None and out[3]["answer.judge"] is None
    tasks = [e.data["task"] for e in events if e.kind == LLM_CALL]
    assert tasks == [TASK_ANSWER, "judge", TASK_ANSWER, "judge", TASK_ANSWER]


def test_judge_reads_wrong() -> None:
    assert judge_answer(Scripted({"Question": "WRONG."}), "q", "a", "b") == 0.0
