"""The extractive backend: each task from the very prompt a real model would get."""

from __future__ import annotations

import importlib.util
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memlab.llm import (
    TASK_ANSWER,
    TASK_CHAT,
    TASK_CONTEXT_SUMMARY,
    TASK_EXTRACT_MEMORIES,
    TASK_JUDGE,
    TASK_MEMORY_SUMMARY,
    ExtractiveChatModel,
    LLMError,
    extractive_summary,
    first_sentences,
    prompts,
    summarize,
)
from memlab.llm.extractive import best_sentence, judge
from memlab.messages import Message
from memlab.tokens import get_counter
from memlab.trace import LLM_CALL, recording

TURNS = [
    ("Ann", "Hi Bob! How are you?"),
    ("Bob", "Good, thanks. How was your week?"),
    ("Ann", "Busy. I moved to Oslo on 3 March 2021 with my sister Kari."),
    ("Bob", "Wow! The Oslo Marathon on 12 May had 20000 runners from Kenya and Norway."),
    ("Ann", "I love skiing and I usually go every Sunday."),
    ("Bob", "Do you like the winters there?"),
    ("Ann", "It is cold. Ok."),
]
TRANSCRIPT = prompts.render_transcript(
    [Message(role="user", content=t, id=f"D1:{i}", speaker=s) for i, (s, t) in enumerate(TURNS, 1)]
)
count = get_counter("cl100k_base").count_text
model = ExtractiveChatModel()


def ask(task: str, max_tokens: int | None = None, question: str | None = None) -> str:
    return model.complete(prompts.build(task, TRANSCRIPT, question=question), task=task, max_tokens=max_tokens).text


def test_a_summary_keeps_the_sentences_with_names_dates_and_numbers_within_the_budget() -> None:
    summary = ask(TASK_CONTEXT_SUMMARY, max_tokens=40)
    assert count(summary) <= 40
    assert "I moved to Oslo on 3 March 2021 with my sister Kari." in summary
    assert "The Oslo Marathon on 12 May had 20000 runners from Kenya and Norway." in summary
    assert "How are you?" not in summary and "Good, thanks." not in summary and "Wow!" not in summary  # filler


def test_a_summary_is_kept_lines_in_transcript_order() -> None:
    summary = ask(TASK_CONTEXT_SUMMARY, max_tokens=60)
    lines = summary.splitlines()
    sources = [
        next(i for i, (s, t) in enumerate(TURNS) if ln.startswith(f"{s}: ") and ln.split(": ", 1)[1] in t)
        for ln in lines
    ]
    assert sources == sorted(sources) and len(sources) == len(set(sources)) >= 2


def test_a_memory_summary_prefers_first_person_preferences_and_habits() -> None:
    memory = ask(TASK_MEMORY_SUMMARY, max_tokens=36)
    assert "I moved to Oslo on 3 March 2021 with my sister Kari." in memory
    assert "I love skiing and I usually go every Sunday." in memory
    assert "Marathon" not in memory
    context = ask(TASK_CONTEXT_SUMMARY, max_tokens=36)
    assert "Bob: The Oslo Marathon on 12 May had 20000 runners from Kenya and Norway." in context


def test_the_budget_defaults_to_summary_tokens() -> None:
    short = ExtractiveChatModel(summary_tokens=25)
    text = short.complete(prompts.build(TASK_CONTEXT_SUMMARY, TRANSCRIPT), task=TASK_CONTEXT_SUMMARY).text
    assert count(text) <= 25
    assert "Bob: The Oslo Marathon on 12 May had 20000 runners from Kenya and Norway." in text


def test_a_budget_below_every_sentence_cuts_the_best_one() -> None:
    text = "[1] Ann: Thanks! The Oslo Marathon on 12 May had 20000 runners. It rained all day long in the city."
    assert extractive_summary(text, max_tokens=8) == "Ann: The Oslo Marathon on 12"
    assert extractive_summary(text, max_tokens=1) == ""


def test_a_budget_larger_than_the_input_returns_the_input_lines_at_most() -> None:
    summary = ask(TASK_CONTEXT_SUMMARY, max_tokens=10_000)
    assert len(summary) <= len(TRANSCRIPT) and count(summary) <= count(TRANSCRIPT)


def test_chinese_sentences_are_split_and_rejoined_without_spaces() -> None:
    text = "[1] 安: 我住在北京。我喜欢喝茶，每天早上都喝。你呢？"
    assert (
        extractive_summary(text, max_tokens=1000, personal=True) == "安: 我住在北京。我喜欢喝茶，每天早上都喝。你呢？"
    )
    assert extractive_summary(text, max_tokens=22, personal=True) in (
        "安: 我喜欢喝茶，每天早上都喝。",
        "安: 我住在北京。你呢？",
    )


def test_answer_picks_the_sentence_that_matches_the_question() -> None:
    assert ask(TASK_ANSWER, question="When did Ann move to Oslo?") == (
        "I moved to Oslo on 3 March 2021 with my sister Kari."
    )
    assert ask(TASK_ANSWER, question="What sport does Ann love?") == "I love skiing and I usually go every Sunday."
    assert ask(TASK_ANSWER, question="Quantum chromodynamics?") == ""


@pytest.mark.parametrize(
    "candidates",
    [
        ["Ada lives in Oslo"],
        ["Ada lives in Oslo", "Bob likes tea"],
        ["Bob likes tea", "Ada lives in Oslo"],
        ["Ada lives in Oslo", "Ada likes tea", "Bob runs", "Kari sings"],
    ],
)
def test_a_sentence_sharing_a_term_is_found_however_few_there_are(candidates: list[str]) -> None:
    """Okapi BM25 scores a term in half or more of the candidates 0 or below: the overlap must still count."""
    assert candidates[best_sentence("Where does Ada live?", candidates) or 0] == "Ada lives in Oslo"
    assert best_sentence("Where does Ada live?", ["Bob likes tea"]) is None
    messages = [
        {"role": "user", "content": ". ".join(candidates) + "."},
        {"role": "user", "content": "Where does Ada live?"},
    ]
    assert model.complete(messages, task=TASK_CHAT).text == "Ada lives in Oslo."


def test_the_answer_respects_max_tokens() -> None:
    answer = ask(TASK_ANSWER, max_tokens=5, question="When did Ann move to Oslo?")
    assert answer == "I moved to Oslo on" and count(answer) <= 5


@pytest.mark.parametrize(
    ("gold", "generated", "verdict"),
    [
        ("7 May 2023", "She went on 7 May 2023.", "CORRECT"),
        ("7 May 2023", "She went on 8 May 2023.", "WRONG"),
        ("Psychology, counseling certification", "counseling and psychology", "CORRECT"),
        ("Psychology, counseling certification", "painting", "WRONG"),
        ("Sweden", "", "WRONG"),
    ],
)
def test_the_judge_compares_token_overlap(gold: str, generated: str, verdict: str) -> None:
    prompt = prompts.judge_prompt("When?", gold, generated)
    assert model.complete(prompt, task=TASK_JUDGE).text == verdict
    assert judge(gold, generated) == (verdict == "CORRECT")


def test_the_judge_needs_the_judge_prompt() -> None:
    with pytest.raises(LLMError, match="judge_prompt"):
        model.complete([{"role": "user", "content": "grade this"}], task=TASK_JUDGE)


def test_chat_quotes_the_earlier_sentence_that_relates_to_the_last_message() -> None:
    messages = [
        {"role": "system", "content": "You are helpful."},
        {"role": "user", "content": "My dog Rex loves the beach. I work as a nurse."},
        {"role": "assistant", "content": "Nice!"},
        {"role": "user", "content": "What does Rex love?"},
    ]
    assert model.complete(messages, task=TASK_CHAT).text == "My dog Rex loves the beach."
    with pytest.raises(LLMError, match="nothing related"):
        model.complete([{"role": "user", "content": "Hello there"}], task=TASK_CHAT)


def test_extract_memories_uses_the_rules_module_or_says_it_is_missing() -> None:
    prompt = prompts.build(TASK_EXTRACT_MEMORIES, TRANSCRIPT)
    if importlib.util.find_spec("memlab.llm.extract_rules") is None:
        with pytest.raises(LLMError, match="extract_rules"):
            model.complete(prompt, task=TASK_EXTRACT_MEMORIES)
        return
    memories = json.loads(model.complete(prompt, task=TASK_EXTRACT_MEMORIES).text)
    assert isinstance(memories, list)
    assert all({"type", "content", "evidence"} <= set(m) for m in memories)


def test_every_call_is_recorded_with_its_usage() -> None:
    with recording() as events:
        completion = model.complete(prompts.build(TASK_CONTEXT_SUMMARY, TRANSCRIPT), task=TASK_CONTEXT_SUMMARY)
        with pytest.raises(LLMError):
            model.complete([{"role": "user", "content": "grade x"}], task=TASK_JUDGE)
    ok, failed = [e.data for e in events if e.kind == LLM_CALL]
    assert ok["backend"] == "extractive" and ok["completion_tokens"] == completion.completion_tokens > 0
    assert ok["prompt_tokens"] == completion.prompt_tokens > count(TRANSCRIPT)
    assert failed["failed"] and failed["error"] == "LLMError" and failed["task"] == TASK_JUDGE


def test_the_lead_baseline_takes_the_first_sentences() -> None:
    assert first_sentences(TRANSCRIPT, max_tokens=15) == "Ann: Hi Bob! How are you?\nBob: Good, thanks."
    assert first_sentences(TRANSCRIPT, max_tokens=14) == "Ann: Hi Bob! How are you?"


# Text from every script and punctuation, with transcript-like lines mixed in.
_ARBITRARY = st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=400)
_TRANSCRIPTS = st.lists(
    st.tuples(st.text("ABCxyz", min_size=1, max_size=5), _ARBITRARY.map(lambda t: " ".join(t.split()))), max_size=12
).map(lambda turns: "\n".join(f"[{i}] {s}: {t}" for i, (s, t) in enumerate(turns)))


@settings(max_examples=150)
@given(text=st.one_of(_ARBITRARY, _TRANSCRIPTS), budget=st.integers(min_value=0, max_value=300))
def test_a_summary_is_never_longer_than_its_input(text: str, budget: int) -> None:
    for personal in (False, True):
        summary = extractive_summary(text, budget, personal=personal)
        assert len(summary) <= len(text)
        assert count(summary) <= min(budget, count(text))


@settings(max_examples=50)
@given(text=_TRANSCRIPTS)
def test_the_model_summary_is_never_longer_than_the_transcript_it_was_given(text: str) -> None:
    for task in (TASK_CONTEXT_SUMMARY, TASK_MEMORY_SUMMARY):
        summary = model.complete(prompts.build(task, text), task=task, max_tokens=10_000).text
        assert len(summary) <= len(text) and count(summary) <= count(text)


@settings(max_examples=200)
@given(
    texts=st.lists(st.text(alphabet="ab \n", max_size=30), max_size=12),
    max_chars=st.integers(0, 400),
)
def test_a_transcript_rendered_up_to_a_length_starts_as_the_whole_one(texts: list[str], max_chars: int) -> None:
    """What write_summary sends (the first max_chars characters) and whether it cut, without rendering every line."""
    messages = [Message("user", t, id=str(i), speaker="Ann") for i, t in enumerate(texts)]
    whole, head = prompts.render_transcript(messages), prompts.render_transcript(messages, max_chars)
    assert head[:max_chars] == whole[:max_chars]
    assert (len(head) > max_chars) == (len(whole) > max_chars)


@settings(max_examples=100)
@given(
    words=st.lists(
        st.sampled_from(["a", "Oslo", "2021,", "I'm", "—", "\u3000", " ", "\n", "\x1c", "supercalifragilistic"])
    ),
    repeat=st.integers(1, 400),
    max_tokens=st.integers(1, 300),
    counter=st.sampled_from(["cl100k_base", "o200k_base", "estimate"]),
)
def test_the_capped_count_is_the_count_up_to_the_budget(
    words: list[str], repeat: int, max_tokens: int, counter: str
) -> None:
    """`_capped_count` (words counted in a prefix first) is ``min(max_tokens, count)`` on short and long texts."""
    text = " ".join(words * repeat)
    tokens = get_counter(counter)
    assert summarize._capped_count(text, max_tokens, tokens) == min(max_tokens, tokens.count_text(text))


def test_the_summary_memo_hashes_a_repeated_request_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """A guarded transcript is sent on every call: its repeat is answered without hashing it again."""
    from memlab.llm import extractive

    hashed: list[bytes] = []
    sha256 = extractive.hashlib.sha256
    monkeypatch.setattr(extractive.hashlib, "sha256", lambda data: hashed.append(data) or sha256(data))
    memo = extractive.SummaryMemo()
    transcript = "[1] Ann: I moved to Oslo in 2021.\n[2] Bob: Nice, I live in Bergen."
    first = memo.summarize(transcript, 20, "cl100k_base", False)
    assert memo.summarize(transcript, 20, "cl100k_base", False) == (first[0], True)
    assert len(hashed) == 1
    # Another request of the same length, or the same transcript with other settings, is hashed and answered anew.
    other = transcript.replace("Oslo", "Rome")
    assert memo.summarize(other, 20, "cl100k_base", False) == (extractive_summary(other, 20), False)
    assert memo.summarize(transcript, 20, "cl100k_base", True)[1] is False
    assert len(hashed) == 3
