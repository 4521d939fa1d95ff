"""Answer scores on hand cases with known values: LoCoMo's and mem0's scorers (answering and judging: tests/eval)."""

from __future__ import annotations

import math

import pytest

from memlab.metrics.answers import gold_answer, locomo_f1, locomo_tokens, mem0_bleu1, mem0_f1


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


def test_gold_answer_treats_missing_nan_and_empty_alike() -> None:
    assert [gold_answer({"answer": v}) for v in (None, math.nan, "", 2023, "May")] == [None, None, None, "2023", "May"]
    assert gold_answer({}) is None
