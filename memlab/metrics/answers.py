"""Answer scores as the LoCoMo and mem0 evaluations compute them: token F1, BLEU-1, an LLM judge.

Both normalize an answer as SQuAD does (lower case, punctuation and the articles a/an/the
removed), then F1 = harmonic mean of token precision and recall over the multiset overlap,
and BLEU-1 = brevity penalty x clipped unigram precision (NLTK's `sentence_bleu` with weights
(1, 0, 0, 0), as mem0 calls it; its smoothing never applies to unigrams, and no match gives 0). LoCoMo also
stems with Porter; memlab does not, so that no NLTK is needed (scores can be slightly lower).

>>> round(token_f1("in May 2023", "May of 2023"), 3)
0.667
>>> bleu1("the cat sat", "the cat sat on the mat") < 1.0
True
"""

from __future__ import annotations

import math
import re
import string
from collections import Counter
from collections.abc import Sequence
from typing import Any

from memlab.llm.base import TASK_ANSWER, TASK_JUDGE, ChatModel, LLMError
from memlab.llm.prompts import build, judge_prompt, render_transcript
from memlab.messages import Message

ANSWER_METRICS = ("answer.f1", "answer.bleu1", "answer.judge")
_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCTUATION = str.maketrans("", "", string.punctuation)


def normalize_answer(text: str) -> list[str]:
    """SQuAD normalization: lower case, no punctuation, no articles, split on whitespace."""
    return _ARTICLES.sub(" ", text.lower().translate(_PUNCTUATION)).split()


def token_f1(prediction: str, gold: str) -> float:
    """Token F1 between a generated and a gold answer (0.0 when either is empty)."""
    pred, ref = normalize_answer(prediction), normalize_answer(gold)
    common = sum((Counter(pred) & Counter(ref)).values())
    if not pred or not ref or common == 0:
        return 0.0
    precision, recall = common / len(pred), common / len(ref)
    return 2 * precision * recall / (precision + recall)


def bleu1(prediction: str, gold: str) -> float:
    """Sentence BLEU-1 of `prediction` against the single reference `gold`."""
    pred, ref = normalize_answer(prediction), normalize_answer(gold)
    if not pred or not ref:
        return 0.0
    ref_counts = Counter(ref)
    clipped = sum(min(n, ref_counts[w]) for w, n in Counter(pred).items())
    precision = clipped / len(pred)
    brevity = 1.0 if len(pred) > len(ref) else math.exp(1 - len(ref) / len(pred))
    return brevity * precision


def context_transcript(context: str) -> str:
    """A probe's context text as the transcript the answer prompt carries: one ``[] context: line`` per line.

    The probe record keeps the request's text, not its messages, so ids and speakers are not available.
    """
    lines = [Message(role="user", content=line, speaker="context") for line in context.splitlines() if line.strip()]
    return render_transcript(lines)


def answer_question(
    model: ChatModel, context: str, question: str, *, language: str = "en", max_tokens: int = 64
) -> str | None:
    """The model's answer to `question` from `context` (the text a strategy would send); None if it failed."""
    prompt = build(TASK_ANSWER, context_transcript(context), language, question=question)
    try:
        return model.complete(prompt, task=TASK_ANSWER, max_tokens=max_tokens).text.strip()
    except LLMError:
        return None


def judge_answer(model: ChatModel, question: str, gold: str, generated: str, *, language: str = "en") -> float | None:
    """1.0 if the judge model says CORRECT, 0.0 if WRONG, None if it failed or said neither."""
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
    contexts: Sequence[str],
    *,
    judge: bool = True,
    language: str = "en",
    max_tokens: int = 64,
) -> list[dict[str, Any]]:
    """Per probe (aligned with `rows`): the generated answer and its `answer.f1|bleu1|judge` scores."""
    out: list[dict[str, Any]] = []
    for row, context in zip(rows, contexts, strict=True):
        gold = str(row.get("answer") or "")
        if not gold:
            out.append({"generated": None, "answer.f1": None, "answer.bleu1": None, "answer.judge": None})
            continue
        generated = answer_question(model, context, str(row["question"]), language=language, max_tokens=max_tokens)
        if generated is None:
            out.append({"generated": None, "answer.f1": None, "answer.bleu1": None, "answer.judge": None})
            continue
        verdict = judge_answer(model, str(row["question"]), gold, generated, language=language) if judge else None
        out.append(
            {
                "generated": generated,
                "answer.f1": token_f1(generated, gold),
                "answer.bleu1": bleu1(generated, gold),
                "answer.judge": verdict,
            }
        )
    return out
