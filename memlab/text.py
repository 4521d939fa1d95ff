"""Plain-text analysis every package shares: words with one CJK rule, terms, sentences, stop words, facts.

Works on English and Chinese. A *word* is a run of letters and digits with inner apostrophes ("I'm",
"don't"; a final 's is dropped, so "Caroline's" is "Caroline"), a number with inner ``. , :``
("3.5", "1:56"), or a single CJK ideograph (Chinese has no spaces). *Terms* are the lower-cased
words plus the bigrams of each CJK run, the usual dictionary-free way to index Chinese. Sentences
come from pysbd (abbreviations such as "Dr." and "p.m." do not end one; it also ends sentences at
。！？). "Facts" are the tokens a summary should not lose: numbers, dates and proper names (capitalized
words that do not start a sentence).

>>> split_sentences("I met Dr. Smith at 5 p.m. yesterday. Do you like it? 我很喜欢。好的")
['I met Dr. Smith at 5 p.m. yesterday.', 'Do you like it?', '我很喜欢。', '好的']
>>> words("I'm in Ann's Oslo at 1:56, 我喜欢咖啡")
["I'm", 'in', 'Ann', 'Oslo', 'at', '1:56', '我', '喜', '欢', '咖', '啡']
>>> terms("Oslo 我喜欢")
['oslo', '我', '喜', '欢', '我喜', '喜欢']
>>> search_terms("Caroline went to the LGBTQ support groups")
['carolin', 'went', 'lgbtq', 'support', 'group']
>>> sorted(fact_tokens("Then Caroline went to Boston on 7 May 2023."))
['2023', '7', 'boston', 'caroline', 'may']
"""

from __future__ import annotations

import functools
import itertools
import re
import threading
from collections.abc import Iterator

import pysbd
import snowballstemmer

from memlab.vocabulary import DATE_WORDS, FIRST_PERSON_WORDS, FUNCTION_WORDS, STOP_WORDS

# CJK Unified Ideographs: Extension A, the main block, compatibility ideographs, Extensions B and later.
CJK = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0003134f"
_CJK_RUN = re.compile(f"[{CJK}]+")
_ALNUM = rf"[^\W_{CJK}]"
# A CJK run (split into ideographs by `words`), a number with inner separators, or letters and digits.
_TOKEN = re.compile(rf"[{CJK}]+|[0-9]+(?:[.,:][0-9]+)+(?!{_ALNUM})|{_ALNUM}+(?:['’]{_ALNUM}+)*")
# A final 's (possessive or "is": "Caroline's" is about Caroline) is dropped: the regex ['’][sS]$ on a token.
_FINAL_S_ENDS = ("'s", "'S", "’s", "’S")
_NUMBER = re.compile(r"^[0-9]+(?:[.,:][0-9]+)*$")
_SEGMENTER = pysbd.Segmenter(language="en", clean=False)
_SEGMENTER_LOCK = threading.Lock()  # pysbd keeps per-call state on the segmenter
_STEMMER = snowballstemmer.stemmer("english")
_STEMMER_LOCK = threading.Lock()  # a Snowball stemmer keeps state while it works
_CACHE = 1 << 16


def speaks_in_first_person(text: str, forms: frozenset[str] = FIRST_PERSON_WORDS) -> bool:
    """Whether a term of `text` is one of `forms` ("I moved", "our dog", 我们).

    >>> from memlab.vocabulary import FIRST_PERSON_SINGULAR
    >>> speaks_in_first_person("We’d love to."), speaks_in_first_person("We’d love to.", FIRST_PERSON_SINGULAR)
    (True, False)
    """
    return not forms.isdisjoint(term_tuple(text))


# Three word lists a text is filtered with, one per question asked of it (memlab.vocabulary says where each
# comes from): STOP_WORDS (is a term worth weighting?), FUNCTION_WORDS (grammar rather than content?),
# FILLER_WORDS (conversation rather than content?).


def split_sentences(text: str) -> list[str]:
    """The sentences of `text`, stripped, in order; text without an end mark is one sentence."""
    return list(sentence_tuple(text))


@functools.lru_cache(maxsize=_CACHE)
def sentence_tuple(text: str) -> tuple[str, ...]:
    """`split_sentences`, memoized: a replay splits the same messages on every call."""
    return tuple(s.strip() for s in _segment(text) if s.strip()) if text.strip() else ()


# `iter_sentences`: characters segmented at a time, and the pieces at a window's end segmented again with what
# follows (the last may be cut; pysbd ended the one before it by reading the first characters of the last).
SENTENCE_WINDOW = 4096
_REDONE = 2


def iter_sentences(text: str, window: int = SENTENCE_WINDOW) -> Iterator[str]:
    """`split_sentences(text)` one at a time, pysbd run on `window` characters at a time: for the first few.

    pysbd's time grows with the square of the text's length (a 200,000-character message: minutes), so a
    caller that wants only the first sentences of a message that fit (`durable_statement`) reads it a window
    at a time: each window's pieces but the last `_REDONE` are yielded, and the next window starts after
    them. A window with no piece before those is doubled. Reading the first k characters costs about
    k / window pysbd runs on `window` characters, however long the text. Beyond the design documents, and not
    always pysbd's own sentences: pysbd keeps a quoted passage (or a numbered list) together only when it sees
    both its ends, so one spanning a window's edge may be cut otherwise; on every message of the corpora, read
    with small windows, the sentences are pysbd's (tests/test_text.py). `durable_statement` uses it only for
    messages too long to split whole.
    """
    start = 0
    while len(text) - start > window:
        spans = _spans(text[start : start + window])
        if spans is None:  # pysbd's own search (`_segment`) does not give positions: the rest at once
            break
        done = [span for span in spans[:-_REDONE] if span[1] <= window - window // 4]
        if not done:
            window *= 2
            continue
        for a, b in done:
            if sentence := text[start + a : start + b].strip():
                yield sentence
        start += done[-1][1]
    yield from sentence_tuple(text[start:])


def _segment(text: str) -> list[str]:
    """``pysbd.Segmenter(language="en", clean=False).segment(text)``: the pieces `_spans` locates."""
    spans = _spans(text)
    if spans is None:  # an empty pattern matches everywhere: pysbd's own search
        with _SEGMENTER_LOCK:
            return list(_SEGMENTER.segment(text))
    return [text[start:end] for start, end in spans]


def _spans(text: str) -> list[tuple[int, int]] | None:
    r"""Where each of pysbd's pieces of `text` lies, located without regexes; None if pysbd found an empty sentence.

    pysbd's own `segment` finds each sentence in the text with ``re.finditer(re.escape(sentence) +
    r"\s*")``: one new pattern per sentence, which also flushes `re`'s 512-pattern cache of the
    patterns pysbd's rules build, and that was two thirds of its time. Here the same search
    (leftmost non-overlapping occurrence, its trailing whitespace, the first that ends past the
    previous piece) is done with `str.find`; tests/test_text.py checks it equals pysbd's on the corpora.
    """
    with _SEGMENTER_LOCK:
        sentences = _SEGMENTER.processor(text).process()
    spans: list[tuple[int, int]] = []
    prior_end = 0
    # Where a repeated sentence's search goes on: the end of its last accepted occurrence. A search from 0 would
    # walk the same occurrences up to that one and reject each (none ends past `prior_end`, which only grows),
    # so starting there finds the same piece without the walk (quadratic in a text that repeats one sentence).
    resume: dict[str, int] = {}
    for sentence in sentences:
        if not sentence:
            return None
        position = resume.get(sentence, 0)
        while (start := text.find(sentence, position)) >= 0:
            end = start + len(sentence)
            while end < len(text) and text[end].isspace():  # r"\s" is str.isspace for str patterns
                end += 1
            if end > prior_end:
                spans.append((start, end))
                prior_end = resume[sentence] = end
                break
            position = end
    return spans


def words(text: str) -> list[str]:
    """The words of `text` in order, as written (see the module docstring)."""
    return list(word_tuple(text))


def _tokens(text: str) -> list[tuple[str, bool]]:
    """Each CJK run (True) and each other word, its final 's dropped (False), in order.

    A token never holds a newline, so ``['’][sS]$`` is its ``endswith(_FINAL_S_ENDS)``: the same words, without
    a regex call per token (tests/test_text.py compares the two).
    """
    return [
        (token, True) if _CJK_RUN.match(token) else (token[:-2] if token.endswith(_FINAL_S_ENDS) else token, False)
        for token in _TOKEN.findall(text)
    ]


@functools.lru_cache(maxsize=_CACHE)
def word_tuple(text: str) -> tuple[str, ...]:
    """`words`, memoized (read-only)."""
    return tuple(w for token, cjk in _tokens(text) for w in (token if cjk else (token,)))


def normalized(text: str) -> str:
    """`text` lower-cased with curly apostrophes straight ("I’M" is "i'm"): the one form words are compared in.

    >>> normalized("I’M Ann")
    "i'm ann"
    """
    return text.lower().replace("’", "'")


@functools.lru_cache(maxsize=_CACHE)
def word_key(text: str) -> str:
    """`text`'s words, case-folded, joined by one space: the form in which two texts say the same words.

    Long-term memory compares whole turns and memories in it (a repeated turn, a duplicate memory).

    Args:
        text: Any text, English or Chinese.

    Returns:
        The key ("" for a text without words).

    >>> word_key("I moved to LISBON!") == word_key("i  moved to lisbon")
    True
    """
    return " ".join(word_tuple(text.casefold()))


def content_words(text: str, drop: frozenset[str] = FUNCTION_WORDS) -> list[str]:
    """The `normalized` words of `text` not in `drop`.

    Args:
        text: Any text, English or Chinese.
        drop: The words that are not content: `FUNCTION_WORDS` (grammar) by default; extraction also
            drops `FILLER_WORDS` (conversation).

    Returns:
        The remaining words, in order.

    >>> content_words("Thanks! She moved to Oslo in 2019."), content_words("Thanks!", FUNCTION_WORDS | {"thanks"})
    (['thanks', 'moved', 'oslo', '2019'], [])
    """
    return [w for w in words(normalized(text)) if w not in drop]


def terms(text: str) -> list[str]:
    """Lower-cased words and the bigrams of each CJK run, in order (the TF-IDF analyzer)."""
    return list(term_tuple(text))


@functools.lru_cache(maxsize=_CACHE)
def term_tuple(text: str) -> tuple[str, ...]:
    """`terms`, memoized (read-only)."""
    out: list[str] = []
    for token, cjk in _tokens(text):
        if cjk:
            out.extend(token)
            out.extend(a + b for a, b in itertools.pairwise(token))
        else:
            out.append(normalized(token))
    return tuple(out)


def content_terms(text: str) -> list[str]:
    """`terms` without English stop words (what two texts must share to be about the same thing)."""
    return list(content_term_tuple(text))


@functools.lru_cache(maxsize=_CACHE)
def content_term_tuple(text: str) -> tuple[str, ...]:
    """`content_terms`, memoized (read-only)."""
    return tuple(t for t in term_tuple(text) if t not in STOP_WORDS)


@functools.lru_cache(maxsize=_CACHE)
def _stem(word: str) -> str:
    with _STEMMER_LOCK:
        return str(_STEMMER.stemWord(word))


def search_terms(text: str) -> list[str]:
    """The BM25 terms of `text`: `content_terms` with English words Snowball-stemmed ("painted" ~ "painting")."""
    return list(_search_term_tuple(text))


@functools.lru_cache(maxsize=_CACHE)
def _search_term_tuple(text: str) -> tuple[str, ...]:
    return tuple(t if _CJK_RUN.match(t) else _stem(t) for t in content_term_tuple(text))


def proper_names(sentence: str) -> set[str]:
    """Capitalized words that do not start the sentence and are not stop words, month names or "I", lower-cased."""
    return {
        t.lower()
        for t in word_tuple(sentence)[1:]
        if t[0].isupper() and t.lower() not in STOP_WORDS and t.lower() not in DATE_WORDS and t != "I" and t[:2] != "I'"
    }


def is_date_or_number(term: str) -> bool:
    """A number ("2023", "1:56") or a date word ("may", "yesterday")."""
    return bool(_NUMBER.match(term)) or term in DATE_WORDS


def fact_tokens(text: str) -> set[str]:
    """Numbers, date words and proper names of `text`, lower-cased (what a summary should keep)."""
    names = set().union(*(proper_names(s) for s in split_sentences(text)))
    return names | {t for t in terms(text) if is_date_or_number(t)}
