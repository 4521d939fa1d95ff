"""The greedy selection stops once no candidate fits the budget (`memlab.llm.summarize._Room`), never before."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from memlab.dialogues import load_locomo
from memlab.llm import summarize
from memlab.llm.corpus import corpus
from memlab.llm.prompts import render_transcript
from memlab.tokens import TiktokenCounter, get_counter


def _fill(transcript: str, budget: int, counter: TiktokenCounter, seed: int) -> tuple[list[bool], bool]:
    """Keep candidates in a random order while they fit; after each kept one, whether `_Room` said none fits
    where one did (a wrong stop), and at the end whether it saw that none fits."""
    found = corpus(transcript)
    candidates = np.flatnonzero(found.content)
    selection = summarize._Selection(found.sentences, counter)
    room = summarize._Room(selection, candidates, summarize._alone_costs(found.sentences, counter))
    order = candidates.tolist()
    random.Random(seed).shuffle(order)
    wrong: list[bool] = []
    for i in order:
        if selection.count_with(i) <= budget:
            selection.add(i)
            kept = {k for ks in selection.lines.values() for k in ks}
            fits = any(selection.count_with(j) <= budget for j in candidates.tolist() if j not in kept)
            wrong.append(room.none_fits(budget) and fits)
    return wrong, bool(wrong) and room.none_fits(budget)


def test_on_locomo_it_stops_only_when_nothing_fits_and_usually_does(locomo_path: Path) -> None:
    messages = list(load_locomo(locomo_path, max_dialogues=2)[1].messages())
    counter = get_counter("cl100k_base")
    assert isinstance(counter, TiktokenCounter)
    stopped = 0
    cases = [(cut, budget, seed) for cut in (30, 120, 400) for budget in (40, 256) for seed in range(3)]
    for cut, budget, seed in cases:
        wrong, full = _fill(render_transcript(messages[:cut])[:50_000], budget, counter, seed)
        assert not any(wrong), (cut, budget, seed)
        stopped += full
    assert stopped >= len(cases) * 2 // 3  # the test is worth making: most full selections are seen to be full


_SENTENCE = st.sampled_from(
    ["Hi Bob!", "I moved to Oslo in 2021 with Kari.", "Ok.", "我喜欢咖啡。", "/usr/bin is a path.", "Did you?"]
)
_LINE = st.tuples(st.sampled_from(["Ann", "", "Dr. Li"]), st.lists(_SENTENCE, min_size=1, max_size=3))


@settings(max_examples=100)
@given(
    lines=st.lists(_LINE, min_size=1, max_size=20),
    budget=st.integers(1, 80),
    seed=st.integers(0, 3),
    encoding=st.sampled_from(["cl100k_base", "o200k_base"]),
)
def test_on_generated_transcripts_it_never_stops_while_a_candidate_fits(lines, budget, seed, encoding) -> None:
    """Lines that are not separable ("/usr/bin", raw lines) and kept lines' other sentences are counted exactly."""
    transcript = "\n".join(
        f"[D1:{i}] {speaker}: {' '.join(texts)}" if speaker else " ".join(texts)
        for i, (speaker, texts) in enumerate(lines)
    )
    counter = get_counter(encoding)
    assert isinstance(counter, TiktokenCounter)
    wrong, _ = _fill(transcript, budget, counter, seed)
    assert not any(wrong)


def test_line_costs_kept_from_request_to_request_are_those_counted_afresh(locomo_path: Path) -> None:
    """A transcript that grew (only its new sentences counted), then one of another dialogue (all counted)."""
    first, second = (list(d.messages()) for d in load_locomo(locomo_path, max_dialogues=2))
    transcripts = [render_transcript(first[:k]) for k in (20, 21, 60)] + [render_transcript(second[:60])]
    counter = get_counter("cl100k_base")
    assert isinstance(counter, TiktokenCounter)
    summarize._ALONE_COSTS.clear()
    in_turn = [summarize._alone_costs(corpus(t).sentences, counter) for t in transcripts]
    for transcript, costs in zip(transcripts, in_turn, strict=True):
        summarize._ALONE_COSTS.clear()
        assert np.array_equal(costs, summarize._alone_costs(corpus(transcript).sentences, counter))
