"""Differential tests: memlab's LoCoMo and mem0 scorers against transcriptions of the published code.

The pairs are real: a LoCoMo run (conv-26 and conv-30, no context strategy) answered by the offline
extractive model with answer evaluation on; every (prediction, gold, category) triple it wrote to
questions.csv is scored by both sides. Random texts rich in the characters the rules treat
specially (commas, semicolons, periods, articles) widen the check.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from reference_scorers import locomo_score, mem0_scores
from replays import NO_FIGURES

from memlab.dialogues.locomo import LOCOMO_CATEGORIES
from memlab.metrics.answers import locomo_f1, mem0_bleu1, mem0_f1

NUMBER = {name: int(n) for n, name in LOCOMO_CATEGORIES.items()}
# One worker runs the module under `--dist loadgroup`, so the answered run below is replayed once, not once per worker.
pytestmark = pytest.mark.xdist_group("answer_scorers")


@pytest.fixture(scope="module")
def answered(tmp_path_factory: pytest.TempPathFactory, locomo_path: Path, compose_config) -> pd.DataFrame:
    from memlab.experiment import run_experiment

    cfg = compose_config(
        "dataset=locomo",
        f"dataset.path={locomo_path}",
        "dataset.sample_ids=[conv-26,conv-30]",
        "eval.answers=true",
        "eval.judge=false",
        NO_FIGURES,  # the tests read questions.csv only
    )
    run = run_experiment(cfg, tmp_path_factory.mktemp("answers")).run_dir
    frame = pd.read_csv(run / "questions.csv", keep_default_na=False, na_values=[""])
    return frame[frame["generated"].notna()]


def _triples(frame: pd.DataFrame) -> list[tuple[str, str | None, str]]:
    return [
        (str(r.generated), None if pd.isna(r.answer) else str(r.answer), str(r.category)) for r in frame.itertuples()
    ]


def test_locomo_scorer_matches_locomo_evaluation_on_real_answers(answered: pd.DataFrame) -> None:
    triples = _triples(answered)
    assert len(triples) >= 300 and {c for _, _, c in triples} == set(NUMBER)
    differing = [
        (p, g, c)
        for p, g, c in triples
        if locomo_f1(p, g, c) != pytest.approx(locomo_score(p, g, NUMBER[c]), abs=1e-12)
    ]
    assert differing == []
    nonzero = sum(1 for p, g, c in triples if locomo_f1(p, g, c))
    assert nonzero > 50  # not vacuous: the extractive answers overlap the gold in about one pair in five


def test_mem0_scorers_match_mem0_evaluation_on_real_answers(answered: pd.DataFrame) -> None:
    triples = [t for t in _triples(answered) if t[2] != "adversarial"]
    assert len(triples) >= 200
    for p, g, c in triples:
        reference = mem0_scores(p, str(g), NUMBER[c])
        assert reference is not None
        assert mem0_f1(p, g, c) == pytest.approx(reference["f1_score"], abs=1e-12), (p, g)
        assert mem0_bleu1(p, g, c) == pytest.approx(reference["bleu_score"], abs=1e-12), (p, g)
    adversarial = next(t for t in _triples(answered) if t[2] == "adversarial")
    assert mem0_scores(adversarial[0], "x", 5) is None and mem0_f1(*adversarial) is None


def test_the_metrics_are_the_means_of_the_rows(answered: pd.DataFrame) -> None:
    scores = [locomo_f1(p, g, c) for p, g, c in _triples(answered)]
    assert answered["answer.f1.locomo"].tolist() == pytest.approx(scores)


TEXT = st.lists(
    st.sampled_from(
        ["The", "a", "and", "cats", "running", "May", "7,", "2023.", ";", ",", "Paris", "not", "mentioned"]
    ),
    max_size=10,
).map(" ".join)


@settings(max_examples=300)
@given(prediction=TEXT, gold=TEXT.filter(str.strip), number=st.sampled_from([1, 2, 3, 4, 5]))
def test_scorers_match_on_random_texts(prediction: str, gold: str, number: int) -> None:
    category = LOCOMO_CATEGORIES[str(number)]
    assert locomo_f1(prediction, gold, category) == pytest.approx(locomo_score(prediction, gold, number), abs=1e-12)
    reference = mem0_scores(prediction, gold, number)
    if reference is None:
        assert mem0_f1(prediction, gold, category) is None
        return
    assert mem0_f1(prediction, gold, category) == pytest.approx(reference["f1_score"], abs=1e-12)
    assert mem0_bleu1(prediction, gold, category) == pytest.approx(reference["bleu_score"], abs=1e-12)
