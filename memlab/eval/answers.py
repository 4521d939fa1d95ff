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
from memlab.llm.base import TASK_ANSWER, TASK_JUDGE, ChatModel, LLMError, failure_label
from memlab.llm.prompts import build, judge_prompt, render_transcript
from memlab.messages import Message
from memlab.metrics.answers import (
    ANSWER_ERROR,
    ANSWER_METRICS,
    JUDGE_ERROR,
    JUDGE_UNPARSED,
    answer_scores,
    answerable,
    gold_answer,
    unparsed_reply,
)

ERROR_COLUMNS = (ANSWER_ERROR, JUDGE_ERROR, JUDGE_UNPARSED)
JUDGE_MAX_TOKENS = 4  # CORRECT or WRONG


def context_transcript(context: str) -> str:
    """A probe's context text as the transcript the answer prompt carries: one ``[] context: line`` per line.

    The probe record keeps the request's text, not its messages, so ids and speakers are not available.

    Args:
        context: A probe's context text.
    """
    lines = [Message(role="user", content=line, speaker="context") for line in context.splitlines() if line.strip()]
    return render_transcript(lines)


def _asked(model: ChatModel, prompt: Sequence[Message], task: str, max_tokens: int) -> tuple[str | None, str | None]:
    """The reply's text, or None and why the call failed (`failure_label`: ``InternalServerError (500)``)."""
    try:
        return model.complete(prompt, task=task, max_tokens=max_tokens).text, None
    except LLMError as e:
        return None, failure_label(e)


def _answer(
    model: ChatModel, context: str, question: str, language: str, max_tokens: int
) -> tuple[str | None, str | None]:
    """The stripped answer to `question` from `context`, or None and why the call failed."""
    prompt = build(TASK_ANSWER, context_transcript(context), language, question=question)
    text, error = _asked(model, prompt, TASK_ANSWER, max_tokens)
    return (None if text is None else text.strip()), error


def _judge(
    model: ChatModel, question: str, gold: str, generated: str, language: str
) -> tuple[float | None, str | None, str | None]:
    """1.0 for CORRECT, 0.0 for WRONG, else None; why the call failed; the reply when it said neither, JSON-quoted so
    that an empty reply reads ``""`` in questions.csv, not as a gap (else None)."""
    said, error = _asked(model, judge_prompt(question, gold, generated, language), TASK_JUDGE, JUDGE_MAX_TOKENS)
    if said is None:
        return None, error, None
    words = said.strip().upper().split()
    if not words or words[0].strip(string.punctuation) not in ("CORRECT", "WRONG"):
        return None, None, unparsed_reply(said)
    return (1.0 if words[0].strip(string.punctuation) == "CORRECT" else 0.0), None, None


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
    return _answer(model, context, question, language, max_tokens)[0]


def judge_answer(model: ChatModel, question: str, gold: str, generated: str, *, language: str = "en") -> float | None:
    """1.0 if the judge model says CORRECT, 0.0 if WRONG, None if it failed or said neither.

    Args:
        model: The judge model.
        question: The probe's question.
        gold: The gold answer.
        generated: The answer to judge.
        language: The prompt's language (en or zh).
    """
    return _judge(model, question, gold, generated, language)[0]


def answer_rows(
    model: ChatModel,
    rows: Sequence[dict[str, Any]],
    contexts: Iterable[str],
    *,
    judge: bool = True,
    language: str = "en",
    max_tokens: int = 64,
) -> list[dict[str, Any]]:
    """Per probe (aligned with `rows`): the generated answer, its scores, the judge's verdict, and why a call failed.

    A probe is answered when it has a gold answer or is adversarial (scored without one); the
    judge needs a gold answer. `answer_error` / `judge_error` name a failed answer or judge call
    (`failure_label`; None when it did not fail), so a failed answer is told from an empty one;
    `judge_unparsed` holds a judge reply that said neither CORRECT nor WRONG, JSON-quoted (no verdict; None
    otherwise).

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
        empty: dict[str, Any] = {"generated": None, **dict.fromkeys(ANSWER_METRICS), **dict.fromkeys(ERROR_COLUMNS)}
        if not answerable(row):
            out.append(empty)
            continue
        generated, error = _answer(model, context, str(row["question"]), language, max_tokens)
        if generated is None:
            out.append({**empty, ANSWER_ERROR: error})
            continue
        verdict = judge_error = unparsed = None
        if judge and gold is not None:
            verdict, judge_error, unparsed = _judge(model, str(row["question"]), gold, generated, language)
        scores = answer_scores(generated, gold, category)
        out.append(
            {**empty, "generated": generated, **scores, "answer.judge": verdict}
            | {JUDGE_ERROR: judge_error, JUDGE_UNPARSED: unparsed}
        )
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
