"""Plain-text analysis the extractive backend shares: sentences, terms, and the facts worth keeping.

Works on English and Chinese: Latin words are lower-cased terms, CJK runs become character
unigrams and bigrams (no segmenter needed). "Facts" are the tokens a summary should not lose:
numbers, dates and proper names (capitalized words that do not start a sentence).

>>> split_sentences("I moved to Oslo in 2021. Do you like it? 我很喜欢。好的")
['I moved to Oslo in 2021.', 'Do you like it?', '我很喜欢。', '好的']
>>> sorted(fact_tokens("Then Caroline went to Boston on 7 May 2023."))
['2023', '7', 'boston', 'caroline', 'may']
"""

from __future__ import annotations

import functools
import itertools
import re
from importlib import resources

# A sentence ends at . ! ? (followed by space) or at a CJK full stop, exclamation or question mark.
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|(?<=[。！？])")
_TERM = re.compile(r"[0-9]+(?:[.,:][0-9]+)*|[^\W\d_]+(?:'[^\W\d_]+)?", re.UNICODE)
_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_NUMBER = re.compile(r"^[0-9]+(?:[.,:][0-9]+)*$")


def word_set(words: str) -> frozenset[str]:
    """A vocabulary written as one space-separated string."""
    return frozenset(words.split())


DATE_WORDS = word_set(
    "january february march april may june july august september october november december "
    "jan feb mar apr jun jul aug sep sept oct nov dec "
    "monday tuesday wednesday thursday friday saturday sunday "
    "yesterday today tomorrow tonight weekend week month year ago last next"
)


def _stop_words() -> frozenset[str]:
    """scikit-learn's English stop words, shipped as data so that importing memlab does not import sklearn."""
    text = resources.files("memlab.llm").joinpath("english_stop_words.txt").read_text(encoding="utf-8")
    return frozenset(w for w in text.split("\n") if w and not w.startswith("#"))


STOP_WORDS = _stop_words()


def split_sentences(text: str) -> list[str]:
    """The sentences of `text`, stripped, in order; text without an end mark is one sentence."""
    return list(sentence_tuple(text))


@functools.lru_cache(maxsize=1 << 16)
def sentence_tuple(text: str) -> tuple[str, ...]:
    """`split_sentences`, memoized: a replay splits the same messages on every call."""
    return tuple(s.strip() for s in _SENTENCE_END.split(text) if s.strip())


def terms(text: str) -> list[str]:
    """Lower-cased word terms and CJK character unigrams+bigrams, in order (the TF-IDF analyzer)."""
    return list(term_tuple(text))


@functools.lru_cache(maxsize=1 << 16)
def term_tuple(text: str) -> tuple[str, ...]:
    """`terms`, memoized (read-only)."""
    out: list[str] = []
    for match in _TERM.finditer(text):
        token = match.group(0)
        if _CJK.search(token):
            chars = [c for c in token if _CJK.match(c)]
            out.extend(chars)
            out.extend(a + b for a, b in itertools.pairwise(chars))
        else:
            out.append(token.lower())
    return tuple(out)


def content_terms(text: str) -> list[str]:
    """`terms` without English stop words (what two texts must share to be about the same thing)."""
    return list(content_term_tuple(text))


@functools.lru_cache(maxsize=1 << 16)
def content_term_tuple(text: str) -> tuple[str, ...]:
    """`content_terms`, memoized (read-only)."""
    return tuple(t for t in term_tuple(text) if t not in STOP_WORDS)


def proper_names(sentence: str) -> set[str]:
    """Capitalized words that do not start the sentence and are not stop words, month names or "I", lower-cased."""
    tokens = [m.group(0) for m in _TERM.finditer(sentence)][1:]
    return {
        t.lower()
        for t in tokens
        if t[0].isupper() and t.lower() not in STOP_WORDS and t.lower() not in DATE_WORDS and t != "I" and t[:2] != "I'"
    }


def is_date_or_number(term: str) -> bool:
    """A number ("2023", "1:56") or a date word ("may", "yesterday")."""
    return bool(_NUMBER.match(term)) or term in DATE_WORDS


def fact_tokens(text: str) -> set[str]:
    """Numbers, date words and proper names of `text`, lower-cased (what a summary should keep)."""
    names = set().union(*(proper_names(s) for s in split_sentences(text)))
    return names | {t for t in terms(text) if is_date_or_number(t)}
