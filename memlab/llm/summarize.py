"""Extractive summaries: rank a transcript's sentences, keep the best within a token budget.

Sentences are scored by TextRank centrality (PageRank over their TF-IDF cosine graph,
Mihalcea & Tarau 2004) plus the facts they carry (numbers, dates, proper names); a memory
summary also favours the speakers' first-person statements of preferences, habits and facts.
Selection is greedy with a redundancy penalty (MMR, Carbonell & Goldstein 1998) and the output
is a subsequence of the input: each kept line is ``speaker: kept sentences``, in transcript
order, so it is never longer than what it was given.

>>> text = "[1] Ann: Hi! How are you?\\n[2] Bob: Fine. I moved to Oslo in 2021 with Kari.\\n[3] Ann: Nice."
>>> extractive_summary(text, max_tokens=20)
'Bob: I moved to Oslo in 2021 with Kari.'
"""

from __future__ import annotations

import functools
import heapq
import re
from dataclasses import dataclass

import numpy as np
from scipy import sparse

from memlab.llm.prompts import parse_transcript
from memlab.llm.text import (
    content_term_tuple,
    is_date_or_number,
    proper_names,
    sentence_tuple,
    term_tuple,
    word_set,
)
from memlab.llm.tfidf import tfidf_vectors
from memlab.tokens import TiktokenCounter, _CachedCounter, get_counter

_NOT_TIKTOKEN_SPACE = re.compile("[\x1c-\x1f]")
TEXTRANK_DAMPING = 0.85  # Mihalcea & Tarau (2004), after PageRank
TEXTRANK_ITERATIONS = 50
MMR_REDUNDANCY = 0.5  # weight of the similarity to what is already kept
WEIGHT_CENTRALITY = 1.0
WEIGHT_FACTS = 1.0
WEIGHT_PERSONAL = 1.0  # memory summaries only
MIN_CONTENT_TERMS = 4  # shorter sentences (greetings, "Thanks!") are scaled down
QUESTION_FACTOR = 0.5  # a question states no fact; a memory summary halves its score

# Words that carry no content of their own: a sentence made of them and speaker names is filler, never kept.
_FILLER_WORDS = word_set(
    "hi hey hello bye thanks thank welcome yes yeah yep yup no nope ok okay sure right fine good great nice cool wow "
    "awesome amazing totally agree exactly absolutely really oh ah haha lol hmm glad sounds fun "
    "你好 谢谢 好的 是的 对 嗯 哈哈 哇 不错"
)
_FIRST_PERSON = word_set("i i'm i've i'd i'll me my mine myself we we're our us 我 我们")
# Verbs and adverbs that mark preferences, habits and durable facts (the memory prompt's three kinds).
_PERSONAL_CUES = word_set(
    "love loves loved like likes enjoy enjoys prefer prefers favorite favourite hate hates dislike "
    "always usually often never every habit routine allergic vegetarian vegan born live lives living "
    "work works working job study studying moved married kids children son daughter wife husband "
    "plan plans planning want wants hope dream goal "
    "喜欢 喜爱 热爱 讨厌 偏好 总是 经常 通常 每天 习惯 过敏 素食 住在 工作 结婚 孩子 计划 希望 打算"
)


@dataclass(frozen=True)
class _Sentence:
    line: int
    speaker: str
    text: str


@dataclass(frozen=True)
class _Analysis:
    """What scoring needs of one sentence that does not depend on the rest of the transcript."""

    content: tuple[str, ...]  # content terms, the TF-IDF analyzer's output
    non_filler: frozenset[str]  # content terms that are not filler words
    names: frozenset[str]  # proper names (`proper_names`)
    date_numbers: int  # distinct date words and numbers
    other_words: tuple[str, ...]  # the other distinct terms, which count as facts when they are names
    length: float  # min(1, content terms / MIN_CONTENT_TERMS)
    cues: int  # first person + personal cue, 0 to 2 (memory summaries)
    question: bool


@functools.lru_cache(maxsize=1 << 16)
def _analyze(text: str) -> _Analysis:
    """Per-sentence analysis, memoized: a replay summarizes mostly the same sentences on every call."""
    words = term_tuple(text)
    distinct = set(words)
    content = content_term_tuple(text)
    return _Analysis(
        content=content,
        non_filler=frozenset(t for t in content if t not in _FILLER_WORDS),
        names=frozenset(proper_names(text)),
        date_numbers=sum(1 for w in distinct if is_date_or_number(w)),
        other_words=tuple(w for w in distinct if not is_date_or_number(w)),
        length=min(1.0, len(content) / MIN_CONTENT_TERMS),
        cues=any(w in _FIRST_PERSON for w in words) + any(w in _PERSONAL_CUES for w in words),
        question=text.rstrip().endswith(("?", "？")),
    )


@functools.lru_cache(maxsize=1 << 16)
def _parse_line(line: str) -> tuple[str, tuple[str, ...]] | None:
    """A transcript line's speaker and sentences (None if it is not a transcript line), memoized."""
    parsed = parse_transcript(line)
    return (parsed[0].speaker, sentence_tuple(parsed[0].text)) if len(parsed) == 1 else None


def _units(transcript: str) -> tuple[list[str], list[_Sentence]]:
    """Speakers per line and the sentences of a transcript (raw lines when it is not one)."""
    parsed = [p for p in map(_parse_line, transcript.splitlines()) if p is not None]
    if not parsed:
        parsed = [("", sentence_tuple(ln)) for ln in transcript.splitlines() if ln.strip()]
    speakers = [speaker for speaker, _ in parsed]
    sentences = [_Sentence(i, speaker, s) for i, (speaker, texts) in enumerate(parsed) for s in texts]
    return speakers, sentences


def _speaker_terms(speakers: list[str]) -> set[str]:
    return {t for s in set(speakers) for t in term_tuple(s)}


def _names(sentences: list[_Sentence], speakers: list[str]) -> set[str]:
    """Proper names other than the speakers' (whom every line names already), lower-cased."""
    found: set[str] = set().union(*(_analyze(s.text).names for s in sentences))
    return found - _speaker_terms(speakers)


def _textrank(similarity: sparse.csr_matrix) -> np.ndarray:
    """PageRank over a weighted undirected graph (power iteration; isolated nodes keep the base rank).

    `similarity` is symmetric with sorted rows. The arithmetic is the reference's (`setdiag(0)`,
    ``(diags(1 / out weight) @ graph).T``) without building those matrices: the transposed
    transition matrix has the graph's layout, its entry (j, i) being ``graph[j, i] / out_weight[i]``.
    """
    n = similarity.shape[0]
    rows = np.repeat(np.arange(n), np.diff(similarity.indptr))
    off = similarity.indices != rows
    indices = similarity.indices[off]
    indptr = np.concatenate(([0], np.cumsum(np.bincount(rows[off], minlength=n)))).astype(similarity.indptr.dtype)
    graph = sparse.csr_matrix((similarity.data[off], indices, indptr), shape=(n, n))
    out_weight = np.asarray(graph.sum(axis=1)).ravel()
    inverse = np.divide(1.0, out_weight, out=np.zeros_like(out_weight), where=out_weight > 0)
    transition_t = sparse.csr_matrix((graph.data * inverse[indices], indices, indptr), shape=(n, n))
    rank = np.full(n, 1.0 / n)
    for _ in range(TEXTRANK_ITERATIONS):
        rank = (1 - TEXTRANK_DAMPING) / n + TEXTRANK_DAMPING * (transition_t @ rank)
    return rank


def _normalized(values: np.ndarray) -> np.ndarray:
    top = values.max(initial=0.0)
    return values / top if top > 0 else np.zeros_like(values)


def score_sentences(
    sentences: list[str], names: set[str], personal: bool = False
) -> tuple[np.ndarray, sparse.csr_matrix]:
    """Each sentence's score and the sentences' cosine similarity matrix (sparse, rows sorted)."""
    vectors = tfidf_vectors(sentences)
    if vectors is None:  # no content terms at all (only stop words or punctuation)
        similarity = sparse.csr_matrix((len(sentences), len(sentences)))
    else:
        similarity = sparse.csr_matrix(vectors @ vectors.T)
        similarity.sort_indices()
    centrality = _normalized(_textrank(similarity))
    analyses = [_analyze(text) for text in sentences]
    facts = np.array([a.date_numbers + sum(1 for w in a.other_words if w in names) for a in analyses], dtype=float)
    length = np.array([a.length for a in analyses], dtype=float)
    score = WEIGHT_CENTRALITY * centrality + WEIGHT_FACTS * _normalized(facts)
    if personal:
        cues = np.array([a.cues for a in analyses], dtype=float)
        score = score + WEIGHT_PERSONAL * cues / 2
        score = score * np.array([QUESTION_FACTOR if a.question else 1.0 for a in analyses])
    return score * length, similarity


def _dense_row(matrix: sparse.csr_matrix, i: int) -> np.ndarray:
    """Row `i` as a dense vector (``matrix[i].toarray().ravel()`` without the indexing machinery)."""
    row = np.zeros(matrix.shape[1])
    start, end = matrix.indptr[i], matrix.indptr[i + 1]
    row[matrix.indices[start:end]] = matrix.data[start:end]
    return row


def _is_filler(sentence: str, speaker_terms: set[str]) -> bool:
    """Greetings, thanks and interjections ("Good, thanks!", "Wow, Ann!"): nothing but filler words and names."""
    return _analyze(sentence).non_filler <= speaker_terms


def _render(sentences: list[_Sentence], chosen: set[int]) -> str:
    lines: dict[int, list[str]] = {}
    speakers: dict[int, str] = {}
    for i in sorted(chosen):
        lines.setdefault(sentences[i].line, []).append(sentences[i].text)
        speakers[sentences[i].line] = sentences[i].speaker
    return "\n".join(_line(speakers[ln], parts) for ln, parts in sorted(lines.items()))


def _line(speaker: str, parts: list[str]) -> str:
    """One summary line: ``speaker: kept sentences`` (no prefix without a speaker)."""
    return (f"{speaker}: " if speaker else "") + _join(parts)


def _join(sentences: list[str]) -> str:
    """Sentences of one line joined as they were split: by a space, or by nothing after CJK punctuation."""
    out = sentences[0]
    for s in sentences[1:]:
        out += ("" if out.endswith(("。", "！", "？")) else " ") + s
    return out


@functools.lru_cache(maxsize=1 << 17)
def _alone(counter: TiktokenCounter, speaker: str, text: str) -> tuple[str, tuple[int, int] | None]:
    """A sentence alone on its summary line: the line and its `line_tokens`, memoized."""
    line = _line(speaker, [text])
    return line, counter.line_tokens(line)


class _Selection:
    """The kept sentences by line, and the token count of their rendering with one more sentence.

    With a tiktoken counter the count is the sum of per-line counts (`TiktokenCounter.line_tokens`),
    so trying a candidate costs the tokens of the one line it changes, not of the whole summary.
    """

    def __init__(self, sentences: list[_Sentence], counter: _CachedCounter) -> None:
        self.sentences = sentences
        self.counter = counter
        self.line_tokens = counter.line_tokens if isinstance(counter, TiktokenCounter) else None
        self.lines: dict[int, list[int]] = {}  # line -> kept sentence indexes, in order
        self.texts: dict[int, str] = {}
        self.tokens: dict[int, tuple[int, int]] = {}  # line -> line_tokens of its text
        self.with_newlines = 0  # sum of every kept line's tokens with its newline
        self.additive = True  # every kept line is separable
        self.last = -1  # the last kept line

    def _text(self, line: int, i: int) -> str:
        kept = self.lines.get(line)
        if not kept:  # the usual candidate: a sentence alone on its line
            return _line(self.sentences[i].speaker, [self.sentences[i].text])
        ordered = sorted([*kept, i])
        return _line(self.sentences[ordered[0]].speaker, [self.sentences[k].text for k in ordered])

    def _costs(self, line: int, i: int) -> tuple[str, tuple[int, int] | None]:
        """The line's text with sentence `i` kept too, and its `line_tokens` (None: count the whole summary)."""
        if not (self.line_tokens and self.additive):
            return self._text(line, i), None
        if line not in self.lines:  # the usual candidate: a sentence alone on its line
            sentence = self.sentences[i]
            return _alone(self.counter, sentence.speaker, sentence.text)
        text = self._text(line, i)
        return text, self.line_tokens(text)

    def count_with(self, i: int) -> int:
        """Tokens of the summary if sentence `i` were kept too."""
        line = self.sentences[i].line
        text, costs = self._costs(line, i)
        if costs is None:
            texts = {**self.texts, line: text}
            return self.counter.count_lines([texts[ln] for ln in sorted(texts)])
        last = max(line, self.last)
        total = self.with_newlines - self.tokens.get(line, (0, 0))[0] + costs[0]
        last_costs = costs if last == line else self.tokens[last]
        return total - last_costs[0] + last_costs[1]

    def add(self, i: int) -> None:
        line = self.sentences[i].line
        text, costs = self._costs(line, i)
        self.lines[line] = sorted([*self.lines.get(line, []), i])
        self.texts[line] = text
        self.last = max(self.last, line)
        if costs is None:
            self.additive = False
            return
        self.with_newlines += costs[0] - self.tokens.get(line, (0, 0))[0]
        self.tokens[line] = costs


def _capped_count(transcript: str, max_tokens: int, counter: _CachedCounter) -> int:
    """``min(max_tokens, count(transcript))``: every word holds at least one token, so a long text is not counted.

    tiktoken splits text into pieces that never join two whitespace-separated words, and each piece
    is at least one token; other counters are asked. (U+001C..U+001F separate words for Python but
    are not whitespace for tiktoken, so a text with one is counted.)
    """
    if (
        isinstance(counter, TiktokenCounter)
        and not _NOT_TIKTOKEN_SPACE.search(transcript)
        and len(transcript.split()) >= max_tokens
    ):
        return max_tokens
    return min(max_tokens, counter.count_text(transcript))


def extractive_summary(transcript: str, max_tokens: int, counter: str = "cl100k_base", personal: bool = False) -> str:
    """The best sentences of `transcript` within `max_tokens`, never longer than the transcript itself.

    `personal` favours first-person preferences, habits and facts (the memory summary).
    """
    speakers, sentences = _units(transcript)
    if not sentences or max_tokens <= 0:
        return ""
    tokens = get_counter(counter)
    count = tokens.count_text
    limit = _capped_count(transcript, max_tokens, tokens)
    score, similarity = score_sentences([s.text for s in sentences], _names(sentences, speakers), personal)
    selection = _Selection(sentences, tokens)
    redundancy = np.zeros(len(sentences))
    # Lazy greedy MMR: a sentence's value only falls as redundancy grows, so a stale heap entry is an upper bound.
    speaker_terms = _speaker_terms(speakers)
    content = [i for i, s in enumerate(sentences) if not _is_filler(s.text, speaker_terms)]
    heap = [(-score[i], i) for i in content]
    heapq.heapify(heap)
    while heap:
        stale, i = heapq.heappop(heap)
        value = score[i] - MMR_REDUNDANCY * redundancy[i]
        if heap and -value > heap[0][0] and -value != stale:
            heapq.heappush(heap, (-value, i))  # another sentence may be better now
            continue
        if selection.count_with(i) <= limit:
            selection.add(i)
            redundancy = np.maximum(redundancy, _dense_row(similarity, i))
    chosen = {i for kept in selection.lines.values() for i in kept}
    if not chosen:  # no sentence fits: the best one's first words, as a provider would cut at max_tokens
        top = sentences[max(content or range(len(sentences)), key=lambda i: (score[i], -i))]
        words = top.text.split()
        while words and count(_render([_Sentence(0, top.speaker, " ".join(words))], {0})) > limit:
            words.pop()
        return _render([_Sentence(0, top.speaker, " ".join(words))], {0}) if words else ""
    return _render(sentences, chosen)


def first_sentences(transcript: str, max_tokens: int, counter: str = "cl100k_base") -> str:
    """The lead baseline: the transcript's first sentences, in the same format, within `max_tokens`."""
    _, sentences = _units(transcript)
    count = get_counter(counter).count_text
    chosen: set[int] = set()
    for i in range(len(sentences)):
        if count(_render(sentences, chosen | {i})) > max_tokens:
            break
        chosen.add(i)
    return _render(sentences, chosen)
