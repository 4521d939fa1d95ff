"""Search terms for the lexical (BM25) side of retrieval: stemmed English words, CJK character bigrams.

English: lower-cased word tokens without scikit-learn's English stop words, Snowball-stemmed
(so "painted" matches "painting"). Chinese has no spaces, so each run of CJK characters
gives its single characters and its bigrams, the usual dictionary-free way to index it.

>>> search_terms("Caroline went to the LGBTQ support groups")
['carolin', 'went', 'lgbtq', 'support', 'group']
>>> search_terms("我喜欢咖啡")
['我', '喜', '欢', '咖', '啡', '我喜', '喜欢', '欢咖', '咖啡']
"""

from __future__ import annotations

import functools
import re
import threading

import snowballstemmer

from memlab.llm.text import STOP_WORDS as ENGLISH_STOP_WORDS

_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+")
_WORD = re.compile(r"[^\W_]+")
_STEMMER = snowballstemmer.stemmer("english")
_STEMMER_LOCK = threading.Lock()  # a Snowball stemmer keeps state while it works


@functools.lru_cache(maxsize=1 << 16)
def _stem(word: str) -> str:
    with _STEMMER_LOCK:
        return str(_STEMMER.stemWord(word))


@functools.lru_cache(maxsize=1 << 14)
def _terms(text: str) -> tuple[str, ...]:
    terms: list[str] = []
    for run in _CJK.findall(text):
        terms.extend(run)
        terms.extend(run[i : i + 2] for i in range(len(run) - 1))
    words = [_stem(w) for w in _WORD.findall(_CJK.sub(" ", text).lower()) if w not in ENGLISH_STOP_WORDS]
    return tuple(words + terms)


def search_terms(text: str) -> list[str]:
    """The BM25 terms of `text` (see the module docstring); cached, as memories are re-indexed often."""
    return list(_terms(text))
