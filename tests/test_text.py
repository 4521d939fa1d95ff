"""memlab.text: sentences through pysbd (abbreviations stay inside, CJK end marks split), one word rule everywhere."""

from __future__ import annotations

import itertools
import re

import pysbd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from memlab import text
from memlab.llm.extract_rules import content_words as rule_words
from memlab.llm.summarize import extractive_summary
from memlab.longterm.extraction import MIN_WORDS, SKIP_TOO_SHORT, should_skip_extraction
from memlab.messages import Message
from memlab.metrics import metric_words as retention_words
from memlab.text import fact_tokens, search_terms, split_sentences, terms, words


def test_abbreviations_do_not_end_a_sentence() -> None:
    assert split_sentences("I met Dr. Smith at 5 p.m. on Friday. He was late!") == [
        "I met Dr. Smith at 5 p.m. on Friday.",
        "He was late!",
    ]
    assert split_sentences("Mrs. Lee moved to the U.S. in 2019. She loves it.") == [
        "Mrs. Lee moved to the U.S. in 2019.",
        "She loves it.",
    ]


def test_chinese_sentences_end_at_full_width_marks() -> None:
    assert split_sentences("我很喜欢。你呢？好的！") == ["我很喜欢。", "你呢？", "好的！"]
    assert split_sentences("I moved to Oslo. 我也去过奥斯陆。真好") == ["I moved to Oslo.", "我也去过奥斯陆。", "真好"]
    assert split_sentences("no end mark") == ["no end mark"] and split_sentences("  ") == []


def test_a_summary_keeps_the_proper_name_after_a_title() -> None:
    transcript = "\n".join(
        [
            "[D1:1] Ann: Hi Bob!",
            "[D1:2] Bob: Hey Ann, how are you?",
            "[D1:3] Ann: I met Dr. Smith at 5 p.m. yesterday about my knee surgery.",
            "[D1:4] Bob: Oh, good luck with it.",
        ]
    )
    summary = extractive_summary(transcript, 24, "cl100k_base", personal=True)
    assert "Dr. Smith at 5 p.m." in summary
    assert "smith" in fact_tokens("I met Dr. Smith at 5 p.m. yesterday.")


def test_one_cjk_rule_for_every_block() -> None:
    # Extension A, the main block, a compatibility ideograph, Extension B: each ideograph a word.
    assert words("㐀中豈𠀀") == ["㐀", "中", "豈", "𠀀"]
    assert words("iPhone手机") == ["iPhone", "手", "机"]  # Latin and CJK split where the script changes
    assert terms("我喜欢 咖啡") == ["我", "喜", "欢", "我喜", "喜欢", "咖", "啡", "咖啡"]
    assert words("Caroline's 1:56 pm, 3.5 km; 4th") == ["Caroline", "1:56", "pm", "3.5", "km", "4th"]
    assert words("I'm sure it’s Ann’s, don't") == ["I'm", "sure", "it", "Ann", "don't"]


def test_every_package_counts_the_same_words() -> None:
    line = "我住在北京 and I'm at 1:56 with Zoë"
    assert retention_words(line) == ["我", "住", "在", "北", "京", "i'm", "1:56", "zoë"]
    assert rule_words(line) == ["我", "住", "在", "北", "京", "i'm", "1:56", "zoë"]  # "with" is a function word
    assert search_terms(line) == ["我", "住", "在", "北", "京", "我住", "住在", "在北", "北京", "i'm", "1:56", "zoë"]
    short = Message("user", "好的呀")  # three ideographs are three words
    assert len(words(short.text)) == MIN_WORDS and should_skip_extraction(short) != SKIP_TOO_SHORT


_CHARS = st.text(alphabet=st.sampled_from(list("ab Z9.,:'’-\n我喜欢𠀀豈。！")), max_size=30)


@given(_CHARS)
def test_terms_are_lower_cased_words_plus_cjk_bigrams(s: str) -> None:
    ws = words(s)
    assert [t for t in terms(s) if len(t) < 2 or not re.fullmatch(f"[{text.CJK}]+", t)] == [
        w.lower().replace("’", "'") for w in ws
    ]
    assert sum(len(w) for w in ws if re.fullmatch(f"[{text.CJK}]", w)) == len(re.findall(f"[{text.CJK}]", s))


def _regex_tokens(s: str) -> list[tuple[str, bool]]:
    """`memlab.text._tokens` as it was written before issue 29: a regex call per token drops the final 's."""
    out = []
    for match in text._TOKEN.finditer(s):
        token = match.group(0)
        cjk = bool(text._CJK_RUN.match(token))
        out.append(((token if cjk else re.sub(r"['’][sS]$", "", token)), cjk))
    return out


_FINAL_S_PIECES = ["a", "Zoë", "9", "'s", "’s", "'S", "’S", "s", "'", " ", "-", ".", "我喜", "\n"]


@given(st.lists(st.sampled_from(_FINAL_S_PIECES)).map("".join))
def test_final_s_is_dropped_as_the_regex_drops_it(s: str) -> None:
    assert text._tokens(s) == _regex_tokens(s)


def test_final_s_is_dropped_on_the_corpora(corpus_texts: list[str]) -> None:
    texts = corpus_texts
    assert any("'s " in t for t in texts) and [t for t in texts if text._tokens(t) != _regex_tokens(t)] == []


_PYSBD = pysbd.Segmenter(language="en", clean=False)
# Sentence ends, abbreviations, repeats, quotes and whitespace of several kinds: where locating pieces is subtle.
_PROSE = st.lists(
    st.sampled_from(
        ["I met Dr.", "Smith", "at 5 p.m.", "Hi!", "Hi!", "Really?", "ok", '"Yes."', "(no)", "3.5", "我很喜欢。"]
    )
    | st.sampled_from([" ", "  ", "\n", "\t", "\u00a0", "\u2003", ". ", "... "]),
    max_size=14,
).map("".join)


@given(_PROSE)
def test_sentences_are_pysbds(s: str) -> None:
    """`memlab.text` locates pysbd's sentences without its per-sentence regexes: the same pieces."""
    assert text._segment(s) == _PYSBD.segment(s)


@pytest.mark.parametrize(
    "repeated",
    ["I like long text. " * 300, "Hi! Hi!  Hi!\nHi! " * 80 + "Hi!", ("Ok. " * 50 + "Dr. Smith came. ") * 20],
)
def test_a_repeated_sentence_is_located_as_pysbd_locates_it(repeated: str) -> None:
    """Its search goes on from its last piece (`_segment`'s resume), not from the text's start each time."""
    assert text._segment(repeated) == _PYSBD.segment(repeated)


def test_sentences_are_pysbds_on_the_corpora(corpus_texts: list[str]) -> None:
    distinct = [t for t in corpus_texts if t.strip()]  # 6,451 of the corpora's 7,028 message texts are distinct
    different = [t for t in distinct if text._segment(t) != _PYSBD.segment(t)]
    assert len(distinct) > 5_000 and different == []


def test_regex_whitespace_is_str_isspace() -> None:
    """pysbd's ``\\s*`` after each sentence is matched with `str.isspace` (`memlab.text._segment`)."""
    chars = [chr(c) for c in range(0x110000) if not 0xD800 <= c < 0xE000]
    assert [c for c in chars if bool(re.match(r"\s", c)) != c.isspace()] == []


def _long_texts(texts: list[str], size: int = 12_000) -> list[str]:
    """Consecutive corpus messages joined into texts of about `size` characters: several sentence windows each."""
    joined: list[str] = []
    part: list[str] = []
    for t in texts:
        part.append(t)
        if sum(map(len, part)) >= size:
            joined.append("\n\n".join(part))
            part = []
    return joined


def test_windowed_sentences_are_pysbds_on_the_corpora(corpus_texts: list[str]) -> None:
    """`iter_sentences` runs pysbd a window at a time (a window smaller than the corpora's long messages here)
    and on long texts made of the corpora's messages (tau-bench's numbered lists included): pysbd's sentences."""
    assert [t for t in corpus_texts if list(text.iter_sentences(t, 1000)) != split_sentences(t)] == []
    long = _long_texts(corpus_texts[:500]) + _long_texts(corpus_texts[-150:])
    assert len(long) >= 4 and [t for t in long if list(text.iter_sentences(t)) != split_sentences(t)] == []


def test_windowed_sentences_read_a_long_text_a_window_at_a_time(monkeypatch: pytest.MonkeyPatch) -> None:
    """The first sentences of a 60,000-character text come from pysbd on windows, never on the whole text (whose
    time grows with the square of its length: 200,000 characters took 147 s)."""
    seen: list[int] = []
    processor = text._SEGMENTER.processor
    monkeypatch.setattr(text._SEGMENTER, "processor", lambda t: seen.append(len(t)) or processor(t))
    long = " ".join(f"Sentence number {i} is here." for i in range(2_000))
    first = list(itertools.islice(text.iter_sentences(long), 3))
    assert first == ["Sentence number 0 is here.", "Sentence number 1 is here.", "Sentence number 2 is here."]
    assert seen == [text.SENTENCE_WINDOW]
    assert len(list(text.iter_sentences(long))) == 2_000 and max(seen) == text.SENTENCE_WINDOW
