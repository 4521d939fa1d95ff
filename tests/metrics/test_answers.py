"""Answer scores: token F1 and BLEU-1 as LoCoMo and mem0 compute them (BLEU-1 checked against NLTK)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memlab.llm.base import TASK_ANSWER, Completion, RecordedChatModel
from memlab.messages import MessageLike, as_messages
from memlab.metrics.answers import answer_rows, bleu1, judge_answer, normalize_answer, token_f1
from memlab.trace import LLM_CALL, recording


def test_normalization_drops_case_punctuation_and_articles() -> None:
    assert normalize_answer("The Cat, a dog; AN owl!") == ["cat", "dog", "owl"]


def test_token_f1_known_values() -> None:
    assert token_f1("May 7 2023", "7 May 2023") == 1.0
    # pred {in, may, 2023} vs gold {may, of, 2023}: 2 common, P = R = 2/3
    assert token_f1("in May 2023", "May of 2023") == pytest.approx(2 / 3)
    assert token_f1("Paris", "London") == 0.0
    assert token_f1("", "London") == 0.0


def test_bleu1_known_values() -> None:
    assert bleu1("the cat sat on the mat", "the cat sat on the mat") == 1.0
    # 2 of 2 unigrams match, candidate shorter than the 4-word reference: BP = exp(1 - 4/2)
    assert bleu1("cat sat", "cat sat on mat") == pytest.approx(2.718281828459045 ** (1 - 2))
    assert bleu1("dog ran", "cat") == 0.0


words = st.lists(
    st.sampled_from(["cat", "dog", "sat", "mat", "on", "red", "blue", "2023", "may"]), min_size=1, max_size=8
)


@settings(max_examples=200, deadline=None)
@given(pred=words, gold=words)
def test_bleu1_matches_nltk_sentence_bleu(pred: list[str], gold: list[str]) -> None:
    nltk_bleu = pytest.importorskip("nltk.translate.bleu_score")
    expected = nltk_bleu.sentence_bleu(
        [gold], pred, weights=(1, 0, 0, 0), smoothing_function=nltk_bleu.SmoothingFunction().method1
    )
    assert bleu1(" ".join(pred), " ".join(gold)) == pytest.approx(expected, rel=1e-9)


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
    rows = [
        {"question": "Where did they fly?", "answer": "Lisbon"},
        {"question": "When?", "answer": "May 2023"},
        {"question": "Adversarial?", "answer": None},
    ]
    with recording() as events:
        out = answer_rows(model, rows, ["ctx 1", "ctx 2", "ctx 3"])
    assert out[0] == {"generated": "Lisbon", "answer.f1": 1.0, "answer.bleu1": 1.0, "answer.judge": 1.0}
    assert out[1]["answer.f1"] == 0.0 and out[1]["answer.judge"] is None  # the judge said neither word
    assert out[2]["generated"] is None  # no gold answer: not asked
    tasks = [e.data["task"] for e in events if e.kind == LLM_CALL]
    assert tasks == [TASK_ANSWER, "judge", TASK_ANSWER, "judge"]


def test_judge_reads_wrong() -> None:
    assert judge_answer(Scripted({"Question": "WRONG."}), "q", "a", "b") == 0.0
