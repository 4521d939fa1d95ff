"""The fast summarizer returns today's summaries byte for byte, and a replay today's metrics.

Two oracles (see tests/llm/summary_oracle.py and tests/llm/reference_summarize.py): the summaries
recorded from a LoCoMo replay before the speed work (and metrics.json from a replay that answers
from that recording), and the slow summarizer kept verbatim, compared with the fast one on LoCoMo
transcripts and on generated ones.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import reference_summarize
from hypothesis import given, settings
from hypothesis import strategies as st
from summary_oracle import STRATEGIES, OracleRun, load, replay

from memlab.dialogues import load_locomo
from memlab.llm import corpus as corpus_module
from memlab.llm.corpus import Sentence
from memlab.llm.prompts import render_transcript
from memlab.llm.summarize import extractive_summary, first_words
from memlab.tokens import get_counter

# One worker runs this module under `--dist loadgroup`: `oracle_replays` is built once, not once per worker.
pytestmark = pytest.mark.xdist_group("summary_equivalence")


@pytest.fixture(scope="session")
def oracle_replays(locomo_path: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, OracleRun]:
    """Each oracle configuration replayed once per test session with today's code."""
    return {s: replay(locomo_path, s, tmp_path_factory.mktemp(s) / "run") for s in STRATEGIES}


@pytest.mark.slow
@pytest.mark.parametrize("strategy", STRATEGIES)
def test_every_summary_is_the_recorded_one(strategy: str, oracle_replays) -> None:
    recorded = load(strategy)
    seen = oracle_replays[strategy].summaries
    assert len(seen) == len(recorded) > 100
    assert seen == recorded


@pytest.mark.slow
@pytest.mark.parametrize("strategy", STRATEGIES)
def test_metrics_are_those_of_the_recorded_summaries(
    strategy: str, oracle_replays, locomo_path: Path, tmp_path: Path
) -> None:
    """metrics.json is byte-identical to a replay that takes every summary from the recording."""
    expected = replay(locomo_path, strategy, tmp_path / "run", "sim.workers=1", recorded=True)
    assert expected.summaries == load(strategy)  # the recording answered every request
    assert oracle_replays[strategy].metrics == expected.metrics


@pytest.mark.slow
@pytest.mark.parametrize("strategy", STRATEGIES)
def test_repeated_requests_are_remembered(strategy: str, oracle_replays) -> None:
    """The replay asked for a summary far more often than one was computed, and latency.json says so."""
    run = oracle_replays[strategy]
    assert run.memo_misses == len(run.summaries)
    metrics, latency = json.loads(run.metrics), json.loads((run.run_dir / "latency.json").read_text())
    assert run.memo_hits + run.memo_misses == metrics["summary.count"]
    assert run.memo_hits > run.memo_misses
    assert latency["latency.cached_calls"] == run.memo_hits


@pytest.mark.parametrize("personal", [False, True])
def test_locomo_transcripts_summarize_as_the_reference_does(locomo_path: Path, personal: bool) -> None:
    messages = list(load_locomo(locomo_path, max_dialogues=2)[1].messages())
    for cut in (21, 60, 150, len(messages)):
        transcript = render_transcript(messages[:cut])[:50_000]
        for budget in (256, 40):
            expected = reference_summarize.summarize(transcript, budget, "cl100k_base", personal)
            assert extractive_summary(transcript, budget, "cl100k_base", personal) == expected, (cut, budget)
            assert extractive_summary(transcript, budget, "estimate", personal) == reference_summarize.summarize(
                transcript, budget, "estimate", personal
            )


FROM_SCRATCH_EVERY = 5  # requests compared with a summary computed from scratch
REFERENCE_EVERY = 40  # requests compared with the reference summarizer (slow)


def test_a_dialogue_summarized_call_by_call_is_summarized_as_from_scratch(locomo_path: Path) -> None:
    """The requests SUMMARIZE sends over a LoCoMo dialogue (its transcript a message longer each call, cut at
    50,000 characters) summarized in turn, each extending the previous one's corpus and count matrix, are the
    summaries computed from scratch (no corpus kept) and the reference's."""
    messages = list(load_locomo(locomo_path, max_dialogues=2)[1].messages())
    transcripts = list(dict.fromkeys(render_transcript(messages[:k])[:50_000] for k in range(16, len(messages) + 1)))
    corpus_module._RECENT.clear()
    in_turn = [extractive_summary(t, 256, "cl100k_base") for t in transcripts]
    assert len(transcripts) > 300 and len(transcripts[-1]) == 50_000 and len(set(in_turn)) > 50
    for k in range(0, len(transcripts), FROM_SCRATCH_EVERY):
        corpus_module._RECENT.clear()
        assert extractive_summary(transcripts[k], 256, "cl100k_base") == in_turn[k], k
    for k in range(0, len(transcripts), REFERENCE_EVERY):
        assert reference_summarize.summarize(transcripts[k], 256, "cl100k_base", False) == in_turn[k], k


_SENTENCE = st.sampled_from(
    [
        "Hi Bob!",
        "How are you?",
        "I moved to Oslo in 2021 with Kari.",
        "Thanks!",
        "My sister loves painting sunsets on Sundays.",
        "Did you visit Berlin last May?",
        "We adopted two cats, Luna and Max.",
        "我喜欢咖啡。",
        "好的",
        "The meeting is at 10:30 on 7 May 2023.",
        "/usr/bin is a path, not a sentence.",
        "Ok.",
    ]
)
_LINE = st.tuples(st.sampled_from(["Ann", "Bob", "", "Dr. Li"]), st.lists(_SENTENCE, min_size=1, max_size=3))


@settings(max_examples=150)
@given(
    lines=st.lists(_LINE, min_size=1, max_size=25),
    budget=st.integers(1, 120),
    personal=st.booleans(),
    counter=st.sampled_from(["cl100k_base", "o200k_base", "estimate"]),
)
def test_generated_transcripts_summarize_as_the_reference_does(lines, budget, personal, counter) -> None:
    transcript = "\n".join(
        f"[D1:{i}] {speaker}: {' '.join(texts)}" if speaker else " ".join(texts)
        for i, (speaker, texts) in enumerate(lines)
    )
    assert extractive_summary(transcript, budget, counter, personal) == reference_summarize.summarize(
        transcript, budget, counter, personal
    )


# Words of every kind a tokenizer splits on: letters, digits, punctuation, contractions, CJK, accents, emoji.
_WORD = st.text(alphabet=st.sampled_from([*"abcXYZ019',-/:é", "咖", "啡", "🙂", "ß"]), min_size=1, max_size=10)
_ANY_WORD = st.text(alphabet=st.sampled_from([*"abcXYZ019'.,!?-/:é", "咖", "🙂"]), min_size=1, max_size=10)
_COUNTERS = st.sampled_from(["cl100k_base", "o200k_base", "estimate"])


@settings(max_examples=200)
@given(
    words=st.lists(_WORD, min_size=1, max_size=120),
    speaker=st.sampled_from(["Ann", ""]),
    budget=st.integers(1, 40),
    counter=_COUNTERS,
)
def test_a_sentence_too_long_for_the_budget_is_cut_as_the_reference_cuts_it(words, speaker, budget, counter) -> None:
    """No sentence fits (no end mark: one sentence): the best one's first words, as the reference keeps them."""
    text = " ".join(words)
    transcript = f"[D1:0] {speaker}: {text}" if speaker else text
    assert extractive_summary(transcript, budget, counter) == reference_summarize.summarize(transcript, budget, counter)


@settings(max_examples=300)
@given(words=st.lists(_ANY_WORD, min_size=1, max_size=150), budget=st.integers(1, 60), counter=_COUNTERS)
def test_first_words_keeps_what_dropping_one_word_at_a_time_kept(words, budget, counter) -> None:
    """The reference drops words from the end one at a time, counting the whole line each time (quadratic: 10.6 s
    on a 50,000-character sentence); `first_words` bisects, and must keep the same words."""
    count = get_counter(counter).count_text
    sentence = Sentence(0, "Ann", " ".join(words))
    kept = sentence.text.split()
    while kept and count(f"Ann: {' '.join(kept)}") > budget:
        kept.pop()
    assert first_words(sentence, count, budget) == (f"Ann: {' '.join(kept)}" if kept else "")
