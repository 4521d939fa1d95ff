"""Answering and judging probes with a scripted model: the loop around the scorers, and the corpus QA evaluation."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from memlab.dialogues import Dialogue, Probe, Session
from memlab.eval import answer_rows, evaluate_answers, judge_answer
from memlab.llm.base import TASK_ANSWER, Completion, RecordedChatModel
from memlab.messages import Message, MessageLike, as_messages
from memlab.trace import LLM_CALL, recording


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
        "answer_error": None,
        "judge_error": None,
        "judge_unparsed": None,
    }
    assert out[1]["answer.f1.locomo"] == 0.0 and out[1]["answer.judge"] is None  # the judge said neither word
    assert out[1]["judge_unparsed"] == '"in June"' and out[1]["judge_error"] is None  # kept, and not a failed call
    assert out[2]["generated"] is None  # no gold answer and not adversarial: not asked
    # adversarial: asked, scored by LoCoMo's abstention check, skipped by mem0, not judged (no gold)
    assert out[3]["answer.f1.locomo"] == 1.0 and out[3]["answer.f1.mem0"] is None and out[3]["answer.judge"] is None
    tasks = [e.data["task"] for e in events if e.kind == LLM_CALL]
    assert tasks == [TASK_ANSWER, "judge", TASK_ANSWER, "judge", TASK_ANSWER]


def test_judge_reads_wrong() -> None:
    assert judge_answer(Scripted({"Question": "WRONG."}), "q", "a", "b") == 0.0


def test_evaluate_answers_counts_evidence_answers_and_verdicts() -> None:
    turns = (
        Message(role="user", content="We flew to Lisbon in May.", id="D1:1", speaker="Ann"),
        Message(role="assistant", content="Lovely, I stayed home.", id="D1:2", speaker="Bob"),
    )
    probes = (
        Probe("q1", "Where did Ann fly?", "Lisbon", ("D1:1",), "single-hop"),
        Probe("q2", "What did Bob do?", "stayed home", ("D1:2",), "single-hop"),
        Probe("q3", "Where did Bob fly?", None, (), "adversarial"),  # not asked: adversarial, no evidence
        Probe("q4", "Who?", "Ann", (), "single-hop"),  # not asked: no evidence
    )
    dialogue = Dialogue("d", (Session("session_1", turns),), probes)
    model = Scripted({"Generated answer: Lisbon": "CORRECT", "Where did Ann": "Lisbon", "What did Bob": "he slept"})
    with recording() as events:
        figures = evaluate_answers([dialogue], model)
    # q1: "Lisbon" is in D1:1 and judged CORRECT; q2: "he slept" is in no turn and the judge said neither word
    assert figures == {"questions": 2, "from_evidence": 0.5, "judged_correct": 0.5}
    assert [e.data["task"] for e in events if e.kind == LLM_CALL] == [TASK_ANSWER, "judge", TASK_ANSWER, "judge"]
