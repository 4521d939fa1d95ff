"""A transcript's sentences and what scoring needs of each, kept per transcript and extended as it grows.

A replay asks for summaries of a transcript that grew by a line or two since the previous request.
`corpus(transcript)` finds the analysis of a transcript this one extends (line for line) and adds
the analysis of the new lines only: their sentences, memoized per-sentence features
(`analyze`), and their term counts for the TF-IDF vectors, kept as flat numpy arrays. What a
sentence's score depends on beyond itself (the proper names found in the whole transcript, the
speakers) is applied per request with numpy. A corpus is never changed once built, so the
transcripts of different strategies, jobs and threads can share one safely.
"""

from __future__ import annotations

import functools
import threading
from collections import OrderedDict
from dataclasses import dataclass

import numpy as np

from memlab.llm.prompts import parse_transcript
from memlab.llm.tfidf import laid_out, term_counts
from memlab.text import (
    content_term_tuple,
    is_date_or_number,
    proper_names,
    sentence_tuple,
    speaks_in_first_person,
    term_tuple,
)
from memlab.vocabulary import FILLER_WORDS, PERSONAL_CUES

MIN_CONTENT_TERMS = 4  # shorter sentences (greetings, "Thanks!") are scaled down

_WORD_IDS: dict[str, int] = {}  # terms that may be names, by first sight (facts are counted with numpy)


@dataclass(frozen=True)
class Sentence:
    line: int
    speaker: str
    text: str


@dataclass(frozen=True)
class Analysis:
    """What scoring needs of one sentence that does not depend on the rest of the transcript."""

    non_filler: frozenset[str]  # content terms that are not filler words
    names: frozenset[str]  # proper names (`proper_names`)
    date_numbers: int  # distinct date words and numbers
    other_words: np.ndarray  # ids (`_WORD_IDS`) of the other distinct terms: facts when they are names
    length: float  # min(1, content terms / MIN_CONTENT_TERMS)
    cues: int  # first person + personal cue, 0 to 2 (memory summaries)
    question: bool


@functools.lru_cache(maxsize=1 << 16)
def analyze(text: str) -> Analysis:
    """Per-sentence analysis, memoized: a replay summarizes mostly the same sentences on every call."""
    words = term_tuple(text)
    distinct = set(words)
    content = content_term_tuple(text)
    others = [w for w in distinct if not is_date_or_number(w)]
    return Analysis(
        non_filler=frozenset(t for t in content if t not in FILLER_WORDS),
        names=frozenset(proper_names(text)),
        date_numbers=len(distinct) - len(others),
        other_words=np.fromiter((_WORD_IDS.setdefault(w, len(_WORD_IDS)) for w in others), np.int64, len(others)),
        length=min(1.0, len(content) / MIN_CONTENT_TERMS),
        cues=speaks_in_first_person(text) + any(w in PERSONAL_CUES for w in words),
        question=text.rstrip().endswith(("?", "？")),
    )


@functools.lru_cache(maxsize=1 << 16)
def _parse_line(line: str) -> tuple[str, tuple[str, ...]] | None:
    """A transcript line's speaker and sentences (None if it is not a transcript line), memoized."""
    parsed = parse_transcript(line)
    return (parsed[0].speaker, sentence_tuple(parsed[0].text)) if len(parsed) == 1 else None


def _content(analyses: list[Analysis], speaker_terms: frozenset[str]) -> np.ndarray:
    """Per sentence: whether it has a content term that is neither a filler word nor in a speaker's name."""
    return np.fromiter((not a.non_filler <= speaker_terms for a in analyses), bool, len(analyses))


def _concat(old: np.ndarray, new: list[np.ndarray]) -> np.ndarray:
    return np.concatenate([old, *new]) if new else old


@dataclass(frozen=True)
class Corpus:
    """Sentences (with their line and speaker) and their features as arrays, one entry per sentence."""

    transcript: str
    speakers: tuple[str, ...]  # per line
    sentences: tuple[Sentence, ...]
    analyses: tuple[Analysis, ...]
    speaker_terms: frozenset[str]  # the terms of every speaker's name
    content: np.ndarray  # not filler: a content term that is neither a filler word nor a speaker's
    # TF-IDF: the sentences' count matrix (`memlab.llm.tfidf.laid_out`), kept as it grows: the columns of
    # each sentence's distinct content terms (`memlab.llm.tfidf.term_counts`) and their counts, flat, row by row
    columns: dict[int, int]  # term id -> column (first use in the corpus); never changed once built
    count_columns: np.ndarray
    count_values: np.ndarray
    term_lengths: np.ndarray  # distinct content terms per sentence
    word_ids: np.ndarray  # `Analysis.other_words`, flat
    word_rows: np.ndarray  # the sentence of each entry of `word_ids`
    date_numbers: np.ndarray
    length: np.ndarray
    cues: np.ndarray
    question: np.ndarray
    found_names: frozenset[str]  # every sentence's proper names

    @staticmethod
    def of(texts: list[str]) -> Corpus:
        """The features of sentences outside any transcript (one line each, no speakers)."""
        return _EMPTY._extended("", [("", (t,)) for t in texts])

    def _extended(self, transcript: str, lines: list[tuple[str, tuple[str, ...]]]) -> Corpus:
        first = len(self.speakers)
        new = [Sentence(first + i, speaker, s) for i, (speaker, texts) in enumerate(lines) for s in texts]
        analyses = [analyze(s.text) for s in new]
        counts = [term_counts(s.text) for s in new]
        n = len(self.sentences)
        words = [a.other_words for a in analyses]
        speakers = self.speakers + tuple(speaker for speaker, _ in lines)
        speaker_terms = self.speaker_terms.union(*(term_tuple(s) for s in set(speakers[first:])))
        if speaker_terms == self.speaker_terms:
            content = np.concatenate([self.content, _content(analyses, speaker_terms)])
        else:  # a new speaker's name can make earlier sentences filler ("Wow, Ann!"): check them all again
            content = _content([*self.analyses, *analyses], speaker_terms)
        columns = dict(self.columns)
        count_columns, count_values = laid_out(columns, counts)
        return Corpus(
            transcript=transcript,
            speakers=speakers,
            sentences=self.sentences + tuple(new),
            analyses=self.analyses + tuple(analyses),
            speaker_terms=speaker_terms,
            content=content,
            columns=columns,
            count_columns=np.concatenate([self.count_columns, count_columns]),
            count_values=np.concatenate([self.count_values, count_values]),
            term_lengths=np.concatenate([self.term_lengths, [len(ids) for ids, _ in counts]]).astype(np.int64),
            word_ids=_concat(self.word_ids, words),
            word_rows=np.concatenate([self.word_rows, np.repeat(np.arange(n, n + len(new)), [len(w) for w in words])]),
            date_numbers=np.concatenate([self.date_numbers, [a.date_numbers for a in analyses]]).astype(np.int64),
            length=np.concatenate([self.length, [a.length for a in analyses]]).astype(float),
            cues=np.concatenate([self.cues, [a.cues for a in analyses]]).astype(float),
            question=np.concatenate([self.question, [a.question for a in analyses]]).astype(bool),
            found_names=self.found_names.union(*(a.names for a in analyses)),
        )

    def names(self) -> set[str]:
        """Proper names other than the speakers' (whom every line names already), lower-cased."""
        return set(self.found_names - self.speaker_terms)

    def facts(self, names: set[str]) -> np.ndarray:
        """Per sentence: its distinct date words and numbers plus its other distinct terms among `names`."""
        name_ids = np.fromiter((_WORD_IDS[w] for w in names if w in _WORD_IDS), np.int64)
        # Whether each word id is a name, looked up per entry (`np.isin` sorted both arrays on every request);
        # sized after the lookup, so it covers every id given out so far (other threads may add some).
        is_name = np.zeros(len(_WORD_IDS), bool)
        is_name[name_ids] = True
        named = np.bincount(self.word_rows[is_name[self.word_ids]], minlength=len(self.sentences))
        facts: np.ndarray = (self.date_numbers + named).astype(float)
        return facts


_EMPTY = Corpus(
    transcript="",
    speakers=(),
    sentences=(),
    analyses=(),
    speaker_terms=frozenset(),
    content=np.zeros(0, bool),
    columns={},
    count_columns=np.zeros(0, np.int32),
    count_values=np.zeros(0, np.int64),
    term_lengths=np.zeros(0, np.int64),
    word_ids=np.zeros(0, np.int64),
    word_rows=np.zeros(0, np.int64),
    date_numbers=np.zeros(0, np.int64),
    length=np.zeros(0),
    cues=np.zeros(0),
    question=np.zeros(0, bool),
    found_names=frozenset(),
)
_RECENT: OrderedDict[str, Corpus] = OrderedDict()  # the latest transcripts' corpora
_RECENT_SIZE = 16
_LOCK = threading.Lock()


def _extends(transcript: str, base: str) -> bool:
    """Whether `transcript` is `base` plus more lines (so that its lines are `base`'s and then the others)."""
    n = len(base)
    return n > 0 and not base[-1].isspace() and transcript[n : n + 1] == "\n" and transcript.startswith(base)


def corpus(transcript: str) -> Corpus:
    """The sentences of a transcript (raw lines when it has no transcript line) and their features."""
    with _LOCK:
        known = _RECENT.get(transcript)
        if known is not None:
            _RECENT.move_to_end(transcript)
            return known
        # The longest corpus this transcript extends, tried longest first: the others are its prefixes too,
        # and each try compares up to the whole transcript.
        recent = sorted(_RECENT.values(), key=lambda c: len(c.transcript), reverse=True)
    base = next((c for c in recent if _extends(transcript, c.transcript)), None)
    rest = transcript[len(base.transcript) + 1 :] if base is not None else transcript
    parsed = [p for p in map(_parse_line, rest.splitlines()) if p is not None]
    if base is None:
        base = _EMPTY
        if not parsed:  # not a transcript: its non-empty lines, no speakers (never extended)
            return _EMPTY._extended("", [("", sentence_tuple(ln)) for ln in transcript.splitlines() if ln.strip()])
    built = base._extended(transcript, parsed)
    with _LOCK:
        _RECENT[transcript] = built
        while len(_RECENT) > _RECENT_SIZE:
            _RECENT.popitem(last=False)
    return built
