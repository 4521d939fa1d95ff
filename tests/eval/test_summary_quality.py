"""The extractive summaries against LoCoMo's gold session summaries, and the metric functions themselves."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memlab.dialogues import load_locomo
from memlab.eval import evaluate_summaries, fact_recall, rouge_1_recall, rouge_l_recall, summarized_sessions


def test_rouge_and_fact_recall_on_hand_made_cases() -> None:
    assert rouge_1_recall("the cat sat", "the cat") == pytest.approx(2 / 3)
    assert rouge_1_recall("a a b", "a") == pytest.approx(1 / 3)  # clipped counts
    assert rouge_l_recall("a b c d", "a x c d") == pytest.approx(3 / 4)
    assert rouge_l_recall("a b c", "c b a") == pytest.approx(1 / 3)
    assert fact_recall("Then Ann met Bob in Oslo on 7 May 2023.", "ann: oslo 2023") == pytest.approx(3 / 6)
    assert rouge_1_recall("", "x") == rouge_l_recall("", "x") == fact_recall("nothing here", "x") == 0.0


def test_every_session_with_a_gold_summary_is_evaluated_as_the_loader_reads_it(locomo_path: Path) -> None:
    raw = json.loads(locomo_path.read_text(encoding="utf-8"))
    expected = {
        f"{s['sample_id']}/{key}": s["session_summary"][f"{key}_summary"]
        for s in raw
        for key, turns in s["conversation"].items()
        if isinstance(turns, list) and turns and s.get("session_summary", {}).get(f"{key}_summary")
    }
    sessions = list(summarized_sessions(load_locomo(locomo_path)))
    assert {key: gold for key, _, gold in sessions} == expected
    assert len(sessions) == 187
    # the messages are the loader's: a shared image's caption is part of the text the summarizer sees
    assert any("[shares an image:" in m.text for _, messages, _ in sessions for m in messages)


def test_extractive_keeps_more_facts_than_the_first_sentences_baseline(locomo_path: Path) -> None:
    figures = evaluate_summaries(load_locomo(locomo_path))
    extractive, baseline = figures["extractive"], figures["first_sentences"]
    print()
    for name, row in figures.items():
        print(name, {k: round(v, 3) for k, v in row.items()})
    assert extractive["sessions"] == baseline["sessions"] > 100
    assert extractive["fact_recall"] > baseline["fact_recall"] + 0.05
    assert extractive["rouge1_recall"] > baseline["rouge1_recall"]
    assert extractive["rougeL_recall"] > baseline["rougeL_recall"]
