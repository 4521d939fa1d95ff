"""Answer scores as the two reference evaluations compute them (answering and judging: `memlab.eval.answers`).

Two named scorers, each a re-expression of a published evaluation (checked against a transcription
of it on real answers by tests/metrics/test_answer_scorers.py):

- **LoCoMo** (snap-research/locomo, ``task_eval/evaluation.py``, ``eval_question_answering``):
  normalize (drop commas, lower case, drop punctuation, drop the words a/an/the/and), Porter-stem
  each word, token F1 over the multiset overlap. Per category: multi-hop splits both answers on
  commas and averages, over the gold parts, the best F1 of any predicted part; open-domain scores
  against the gold's first ``;`` part; adversarial scores 1 if the answer contains "no information
  available" or "not mentioned", else 0 (the gold answer is not used); the others plain F1.
- **mem0** (mem0ai/mem0, ``evaluation/metrics/utils.py``, as ``evaluation/evals.py`` calls it):
  F1 over the *sets* of tokens from lower-casing and splitting on whitespace after turning
  ``. , ! ?`` into spaces; BLEU-1 = brevity penalty x clipped unigram precision over NLTK word
  tokens of the lower-cased texts (``sentence_bleu`` with weights (1, 0, 0, 0): its smoothing
  never reaches unigrams and no match scores 0). The adversarial category is skipped (None).

One deviation, both sides of the differential test share it: NLTK's ``word_tokenize`` splits
sentences with the trained Punkt model, a data download memlab never makes; memlab uses Punkt's
untrained defaults, which differ only around abbreviations ("p.m. on" stays one sentence there).

>>> locomo_f1("Paris, Rome", "Rome, Paris", "multi-hop")
1.0
>>> round(locomo_f1("Paris and Rome", "Rome, Paris", "multi-hop"), 3)  # one predicted part: F1 2/3 per gold part
0.667
>>> locomo_f1("That is not mentioned in the conversation.", None, "adversarial")
1.0
>>> round(mem0_f1("in May 2023", "May of 2023"), 3), mem0_f1("anything", "x", "adversarial")
(0.667, None)
"""

from __future__ import annotations

import functools
import json
import math
import string
from collections import Counter
from collections.abc import Sequence
from typing import Any

from memlab.dialogues.locomo import ADVERSARIAL
from memlab.metrics.events import call_retries
from memlab.metrics.pricing import ModelPrice, aux_cost_usd
from memlab.metrics.tokens import aux_token_metrics
from memlab.trace import LLM_CALL, Event
from memlab.vocabulary import METRIC_ABSTENTION_PHRASES, METRIC_LOCOMO_DROPPED_WORDS

MULTI_HOP, OPEN_DOMAIN = "multi-hop", "open-domain"
ABSTENTION_PHRASES = METRIC_ABSTENTION_PHRASES  # LoCoMo's adversarial check
ANSWER_METRICS = ("answer.f1.locomo", "answer.f1.mem0", "answer.bleu1.mem0", "answer.judge")
# questions.csv's columns naming a failed answer or judge call (memlab.eval.answers): empty when it did not fail.
ANSWER_ERROR, JUDGE_ERROR = "answer_error", "judge_error"
# questions.csv's column holding a judge reply that said neither CORRECT nor WRONG (no verdict), JSON-quoted so that an
# empty reply is "" and not a gap: empty otherwise.
JUDGE_UNPARSED = "judge_unparsed"


def unparsed_reply(reply: str) -> str:
    """A judge reply as `JUDGE_UNPARSED` holds it: JSON-quoted, so that an empty one is ``""``, not a gap.

    >>> unparsed_reply(""), unparsed_reply("Maybe")
    ('""', '"Maybe"')
    """
    return json.dumps(reply, ensure_ascii=False)


_PUNCTUATION = str.maketrans("", "", string.punctuation)
_MEM0_SEPARATORS = str.maketrans(".,!?", "    ")


@functools.cache
def _stem() -> Any:
    from nltk.stem import PorterStemmer

    return PorterStemmer().stem


def locomo_tokens(text: str) -> list[str]:
    """LoCoMo's normalized, Porter-stemmed words of `text`."""
    text = text.replace(",", "").lower().translate(_PUNCTUATION)
    stem = _stem()
    return [stem(w) for w in METRIC_LOCOMO_DROPPED_WORDS.sub(" ", text).split()]


def _multiset_f1(pred: Sequence[str], gold: Sequence[str]) -> float:
    common = sum((Counter(pred) & Counter(gold)).values())
    if common == 0:
        return 0.0
    precision, recall = common / len(pred), common / len(gold)
    return 2 * precision * recall / (precision + recall)


def locomo_f1(prediction: str, gold: str | None, category: str) -> float | None:
    """LoCoMo's score of `prediction` for a question of `category` (None: no gold to score against)."""
    if category == ADVERSARIAL:
        said = prediction.lower()
        return 1.0 if any(p in said for p in ABSTENTION_PHRASES) else 0.0
    if gold is None:
        return None
    if category == OPEN_DOMAIN:
        gold = gold.split(";")[0].strip()
    if category == MULTI_HOP:
        parts = [locomo_tokens(p.strip()) for p in prediction.split(",")]
        golds = [locomo_tokens(g.strip()) for g in gold.split(",")]
        return sum(max(_multiset_f1(p, g) for p in parts) for g in golds) / len(golds)
    return _multiset_f1(locomo_tokens(prediction), locomo_tokens(gold))


def mem0_tokens(text: str) -> list[str]:
    """mem0's simple tokenizer: lower case, ``. , ! ?`` as spaces, split on whitespace."""
    return text.lower().translate(_MEM0_SEPARATORS).split()


def mem0_f1(prediction: str, gold: str | None, category: str = "") -> float | None:
    """mem0's token-set F1 (None for the skipped adversarial category or without gold)."""
    if category == ADVERSARIAL or gold is None:
        return None
    if not prediction or not gold:
        return 0.0
    pred, ref = set(mem0_tokens(prediction.strip())), set(mem0_tokens(gold.strip()))
    common = len(pred & ref)
    if not pred or not ref or common == 0:
        return 0.0
    precision, recall = common / len(pred), common / len(ref)
    return 2 * precision * recall / (precision + recall)


@functools.cache
def _word_tokenizers() -> tuple[Any, Any]:
    from nltk.tokenize import NLTKWordTokenizer
    from nltk.tokenize.punkt import PunktSentenceTokenizer

    return PunktSentenceTokenizer(), NLTKWordTokenizer()


def word_tokens(text: str) -> list[str]:
    """NLTK word tokens (Treebank rules per Punkt sentence; untrained Punkt, see the module docstring)."""
    sentences, words = _word_tokenizers()
    return [w for sentence in sentences.tokenize(text) for w in words.tokenize(sentence)]


def mem0_bleu1(prediction: str, gold: str | None, category: str = "") -> float | None:
    """mem0's BLEU-1 of `prediction` against the single reference `gold` (None where skipped)."""
    if category == ADVERSARIAL or gold is None:
        return None
    pred, ref = word_tokens(prediction.lower()), word_tokens(gold.lower())
    ref_counts = Counter(ref)
    clipped = sum(min(n, ref_counts[w]) for w, n in Counter(pred).items())
    if not pred or clipped == 0:
        return 0.0
    brevity = 1.0 if len(pred) > len(ref) else math.exp(1 - len(ref) / len(pred))
    return brevity * clipped / len(pred)


def answer_scores(prediction: str, gold: str | None, category: str) -> dict[str, float | None]:
    """Every scorer's value for one answer: `answer.f1.locomo`, `answer.f1.mem0`, `answer.bleu1.mem0`."""
    return {
        "answer.f1.locomo": locomo_f1(prediction, gold, category),
        "answer.f1.mem0": mem0_f1(prediction, gold, category),
        "answer.bleu1.mem0": mem0_bleu1(prediction, gold, category),
    }


def gold_answer(row: dict[str, Any]) -> str | None:
    """A probe row's gold answer as text; None when it has none (missing, NaN from a CSV, or empty)."""
    value = row.get("answer")
    if value is None or (isinstance(value, float) and math.isnan(value)) or value == "":
        return None
    return str(value)


def answerable(row: dict[str, Any]) -> bool:
    """Whether a probe is answered and scored: it has a gold answer, or is adversarial (scored without one)."""
    return gold_answer(row) is not None or str(row.get("category") or "") == ADVERSARIAL


def answer_call_metrics(events: Sequence[Event], price: ModelPrice) -> dict[str, int | float]:
    """`answer.calls`, `answer.retries`, `answer.tokens.prompt|completion|total` and `answer.cost_usd`: what answering
    and judging cost (`answer.retries`: the requests those calls sent beyond their first).

    Those calls are made after the replay, outside its records, so the `tokens.aux.*` and `cost.*` of the
    strategies' own calls leave them out; they are counted as those are (every call, cached or not, each at its
    model's price, `price` for a model the price table does not know).

    Args:
        events: The LLM_CALL events of the answer and judge calls.
        price: The price of a model the table does not know (the run's pricing.model).
    """
    tokens = aux_token_metrics(events)
    return {
        "answer.calls": sum(1 for e in events if e.kind == LLM_CALL),
        "answer.retries": sum(call_retries(e.data) for e in events if e.kind == LLM_CALL),
        "answer.tokens.prompt": tokens["tokens.aux.prompt"],
        "answer.tokens.completion": tokens["tokens.aux.completion"],
        "answer.tokens.total": tokens["tokens.aux.total"],
        "answer.cost_usd": aux_cost_usd(events, price),
    }
