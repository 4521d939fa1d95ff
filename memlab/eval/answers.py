"""Answering probes with a model and judging the answers: the model-calling half of `eval.answers=true`.

The scores themselves are pure functions in `memlab.metrics.answers`; this module asks the model
(the `answer` and `judge` prompts of `memlab.llm.prompts`) and hands the answers to them.
"""

from __future__ import annotations

import string
from collections.abc import Iterable, Sequence
from typing import Any

from memlab.dialogues import Dialogue
from memlab.dialogues.locomo import ADVERSARIAL
from memlab.llm.base import TASK_ANSWER, TASK_JUDGE, ChatModel, LLMError
from memlab.llm.prompts import build, judge_prompt, render_transcript
from memlab.messages import Message
from memlab.metrics.answers import ANSWER_METRICS, answer_scores, answerable, gold_answer


def context_transcript(context: str) -> str:
    """A probe's context text as the transcript the answer prompt carries: one ``[] context: line`` per line.

    The probe record keeps the request's text, not its messages, so ids and speakers are not available.

    Args:
        context: A probe's context text.
    """
    lines = [Message(role="user", content=line, speaker="context") for line in context.splitlines() if line.strip()]
    return render_transcript(lines)


def answer_question(
    model: ChatModel, context: str, question: str, *, language: str = "en", max_tokens: int = 64
) -> str | None:
    """The model's answer to `question` from `context` (the text a strategy would send); None if it failed.

    Args:
        model: The answering model.
        context: The text a strategy would send.
        question: The probe's question.
        language: The prompt's language (en or zh).
        max_tokens: The longest answer asked for.
    """
    prompt = build(TASK_ANSWER, context_transcript(context), language, question=question)
    try:
        return model.complete(prompt, task=TASK_ANSWER, max_tokens=max_tokens).text.strip()
    except LLMError:
        return None


def judge_answer(model: ChatModel, question: str, gold: str, generated: str, *, language: str = "en") -> float | None:
    """1.0 if the judge model says CORRECT, 0.0 if WRONG, None if it failed or said neither.

    Args:
        model: The judge model.
        question: The probe's question.
        gold: The gold answer.
        generated: The answer to judge.
        language: The prompt's language (en or zh).
    """
    try:
        verdict = model.complete(judge_prompt(question, gold, generated, language), task=TASK_JUDGE, max_tokens=4).text
    except LLMError:
        return None
    words = verdict.strip().upper().split()
    if not words or words[0].strip(string.punctuation) not in ("CORRECT", "WRONG"):
        return None
    return 1.0 if words[0].strip(string.punctuation) == "CORRECT" else 0.0


def answer_rows(
    model: ChatModel,
    rows: Sequence[dict[str, Any]],
    contexts: Iterable[str],
    *,
    judge: bool = True,
    language: str = "en",
    max_tokens: int = 64,
) -> list[dict[str, Any]]:
    """Per probe (aligned with `rows`): the generated answer, its scores and the judge's verdict.

    A probe is answered when it has a gold answer or is adversarial (scored without one); the
    judge needs a gold answer.

    Args:
        model: The answering (and judging) model.
        rows: The probe rows (`memlab.metrics.probe_rows`).
        contexts: Each probe's context text, aligned with `rows`.
        judge: Also ask the model to judge each answer.
        language: The prompts' language (en or zh).
        max_tokens: The longest answer asked for.
    """
    out: list[dict[str, Any]] = []
    for row, context in zip(rows, contexts, strict=True):
        gold = gold_answer(row)
        category = str(row.get("category") or "")
        empty: dict[str, Any] = {"generated": None, **dict.fromkeys(ANSWER_METRICS)}
        if not answerable(row):
            out.append(empty)
            continue
        generated = answer_question(model, context, str(row["question"]), language=language, max_tokens=max_tokens)
        if generated is None:
            out.append(empty)
            continue
        verdict = None
        if judge and gold is not None:
            verdict = judge_answer(model, str(row["question"]), gold, generated, language=language)
        out.append({"generated": generated, **answer_scores(generated, gold, category), "answer.judge": verdict})
    return out


def evaluate_answers(dialogues: Iterable[Dialogue], model: ChatModel) -> dict[str, float]:
    """Each non-adversarial question with evidence, asked over its whole conversation and judged.

    `from_evidence` is the share of answers found verbatim in an evidence turn, `judged_correct`
    the share the model's judge calls CORRECT (`python experiments/extractive_qa.py`).

    Args:
        dialogues: Dialogues with probes.
        model: The answering and judging model.
    """
    asked = from_evidence = correct = 0
    for dialogue in dialogues:
        turns = list(dialogue.messages())
        transcript = render_transcript(turns)
        text_of = {m.id: m.text for m in turns}
        for probe in dialogue.probes:
            if probe.category == ADVERSARIAL or not probe.evidence or probe.answer is None:
                continue
            asked += 1
            prompt = build(TASK_ANSWER, transcript, question=probe.question)
            answer = model.complete(prompt, task=TASK_ANSWER).text
            from_evidence += bool(answer) and any(answer in text_of.get(e, "") for e in probe.evidence)
            verdict = model.complete(judge_prompt(probe.question, probe.answer, answer), task=TASK_JUDGE).text
            correct += verdict == "CORRECT"
    return {"questions": asked, "from_evidence": from_evidence / asked, "judged_correct": correct / asked}
