"""Transcriptions of the published answer scorers, kept as the oracle of the differential tests.

- `locomo_score`: snap-research/locomo ``task_eval/evaluation.py`` (`normalize_answer`, `f1_score`,
  `f1`, and the category dispatch of `eval_question_answering`), categories as LoCoMo's integers;
- `mem0_scores`: mem0ai/mem0 ``evaluation/metrics/utils.py`` (`simple_tokenize`, the F1 of
  `calculate_metrics`, `calculate_bleu_scores`'s bleu1) with ``evaluation/evals.py``'s category-5 skip.

Written as the originals read, with the libraries they call (NLTK's PorterStemmer, word_tokenize,
sentence_bleu). The one substitution: `word_tokenize` needs the trained Punkt model, which is not
available offline, so `untrained_punkt` installs Punkt's untrained defaults in its place.
"""

from __future__ import annotations

import contextlib
import re
import string
from collections import Counter
from collections.abc import Iterator

import nltk
import nltk.tokenize
import numpy as np
from nltk.stem import PorterStemmer
from nltk.tokenize.punkt import PunktSentenceTokenizer
from nltk.translate.bleu_score import SmoothingFunction, sentence_bleu

ps = PorterStemmer()


@contextlib.contextmanager
def untrained_punkt() -> Iterator[None]:
    original = nltk.tokenize._get_punkt_tokenizer
    nltk.tokenize._get_punkt_tokenizer = lambda language="english": PunktSentenceTokenizer()  # type: ignore[assignment]
    try:
        yield
    finally:
        nltk.tokenize._get_punkt_tokenizer = original


# ---- LoCoMo, task_eval/evaluation.py
def normalize_answer(s):  # type: ignore[no-untyped-def]
    s = s.replace(",", "")

    def remove_articles(text):  # type: ignore[no-untyped-def]
        return re.sub(r"\b(a|an|the|and)\b", " ", text)

    def white_space_fix(text):  # type: ignore[no-untyped-def]
        return " ".join(text.split())

    def remove_punc(text):  # type: ignore[no-untyped-def]
        exclude = set(string.punctuation)
        return "".join(ch for ch in text if ch not in exclude)

    def lower(text):  # type: ignore[no-untyped-def]
        return text.lower()

    return white_space_fix(remove_articles(remove_punc(lower(s))))


def f1_score(prediction, ground_truth):  # type: ignore[no-untyped-def]
    prediction_tokens = [ps.stem(w) for w in normalize_answer(prediction).split()]
    ground_truth_tokens = [ps.stem(w) for w in normalize_answer(ground_truth).split()]
    common = Counter(prediction_tokens) & Counter(ground_truth_tokens)
    num_same = sum(common.values())
    if num_same == 0:
        return 0
    precision = 1.0 * num_same / len(prediction_tokens)
    recall = 1.0 * num_same / len(ground_truth_tokens)
    return (2 * precision * recall) / (precision + recall)


def f1(prediction, ground_truth):  # type: ignore[no-untyped-def]
    predictions = [p.strip() for p in prediction.split(",")]
    ground_truths = [g.strip() for g in ground_truth.split(",")]
    return np.mean([max([f1_score(prediction, gt) for prediction in predictions]) for gt in ground_truths])


def locomo_score(output: str, answer: str | None, category: int) -> float:
    """One line of `eval_question_answering` (eval_key='prediction', metric='f1')."""
    answer = str(answer)
    if category == 3:
        answer = answer.split(";")[0].strip()
    if category in [2, 3, 4]:
        return float(f1_score(output, answer))
    if category in [1]:
        return float(f1(output, answer))
    if category in [5]:
        if "no information available" in output.lower() or "not mentioned" in output.lower():
            return 1.0
        return 0.0
    raise ValueError(category)


# ---- mem0, evaluation/metrics/utils.py and evaluation/evals.py
def simple_tokenize(text):  # type: ignore[no-untyped-def]
    text = str(text)
    return text.lower().replace(".", " ").replace(",", " ").replace("!", " ").replace("?", " ").split()


def calculate_bleu1(prediction: str, reference: str) -> float:
    pred_tokens = nltk.word_tokenize(prediction.lower())
    ref_tokens = [nltk.word_tokenize(reference.lower())]
    smooth = SmoothingFunction().method1
    return float(sentence_bleu(ref_tokens, pred_tokens, weights=(1, 0, 0, 0), smoothing_function=smooth))


def calculate_f1(prediction: str, reference: str) -> float:
    if not prediction or not reference:
        return 0.0
    prediction = str(prediction).strip()
    reference = str(reference).strip()
    pred_tokens = set(simple_tokenize(prediction))
    ref_tokens = set(simple_tokenize(reference))
    common_tokens = pred_tokens & ref_tokens
    if not pred_tokens or not ref_tokens:
        return 0.0
    precision = len(common_tokens) / len(pred_tokens)
    recall = len(common_tokens) / len(ref_tokens)
    return 2 * precision * recall / (precision + recall) if (precision + recall) > 0 else 0.0


def mem0_scores(pred_answer: str, gt_answer: str, category: int) -> dict[str, float] | None:
    """`process_item`'s scores for one item; None for the skipped category 5."""
    if str(category) == "5":
        return None
    with untrained_punkt():
        return {"f1_score": calculate_f1(pred_answer, gt_answer), "bleu_score": calculate_bleu1(pred_answer, gt_answer)}
