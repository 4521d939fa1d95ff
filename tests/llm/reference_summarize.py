"""The extractive summarizer exactly as it was before the speed work (commit a681381): the slow oracle.

`memlab.llm.summarize.extractive_summary` must return the same bytes as `summarize` here for every input;
tests/llm/test_summary_equivalence.py checks it on LoCoMo transcripts and on generated ones.
Kept verbatim but for this docstring and what it shares with production: the text functions
(`memlab.text`: the same sentences and terms), the word lists and the scoring constants (the
algorithm is what this oracle checks, not its parameters); do not "improve" it.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass

import numpy as np
from scipy import sparse
from sklearn.feature_extraction.text import TfidfVectorizer

from memlab.llm.corpus import MIN_CONTENT_TERMS, PERSONAL_CUES
from memlab.llm.prompts import parse_transcript
from memlab.llm.summarize import (
    MMR_REDUNDANCY,
    QUESTION_FACTOR,
    TEXTRANK_DAMPING,
    TEXTRANK_ITERATIONS,
    WEIGHT_CENTRALITY,
    WEIGHT_FACTS,
    WEIGHT_PERSONAL,
)
from memlab.text import (
    content_terms,
    is_date_or_number,
    proper_names,
    split_sentences,
    terms,
)
from memlab.tokens import get_counter
from memlab.vocabulary import FILLER_WORDS, FIRST_PERSON_WORDS


@dataclass(frozen=True)
class _Sentence:
    line: int
    speaker: str
    text: str


def _units(transcript: str) -> tuple[list[str], list[_Sentence]]:
    """Speakers per line and the sentences of a transcript (raw lines when it is not one)."""
    parsed = parse_transcript(transcript)
    if parsed:
        speakers, texts = [ln.speaker for ln in parsed], [ln.text for ln in parsed]
    else:
        texts = [ln for ln in transcript.splitlines() if ln.strip()]
        speakers = [""] * len(texts)
    sentences = [_Sentence(i, speakers[i], s) for i, text in enumerate(texts) for s in split_sentences(text)]
    return speakers, sentences


def _names(sentences: list[_Sentence], speakers: list[str]) -> set[str]:
    """Proper names other than the speakers' (whom every line names already), lower-cased."""
    found: set[str] = set().union(*(proper_names(s.text) for s in sentences))
    return found - {t for s in speakers for t in terms(s)}


def _textrank(similarity: sparse.csr_matrix) -> np.ndarray:
    """PageRank over a weighted undirected graph (power iteration; isolated nodes keep the base rank)."""
    n = similarity.shape[0]
    graph = similarity.tolil()
    graph.setdiag(0.0)
    graph = graph.tocsr()
    out_weight = np.asarray(graph.sum(axis=1)).ravel()
    inverse = np.divide(1.0, out_weight, out=np.zeros_like(out_weight), where=out_weight > 0)
    transition_t = (sparse.diags(inverse) @ graph).T.tocsr()
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
    """Each sentence's score and the sentences' cosine similarity matrix (sparse)."""
    try:
        vectors = TfidfVectorizer(analyzer=content_terms, sublinear_tf=True).fit_transform(sentences)
        similarity = sparse.csr_matrix(vectors @ vectors.T)
    except ValueError:  # no content terms at all (only stop words or punctuation)
        similarity = sparse.csr_matrix((len(sentences), len(sentences)))
    centrality = _normalized(_textrank(similarity))
    facts = np.zeros(len(sentences))
    cues = np.zeros(len(sentences))
    length = np.ones(len(sentences))
    for i, text in enumerate(sentences):
        words = terms(text)
        facts[i] = sum(1 for w in set(words) if w in names or is_date_or_number(w))
        length[i] = min(1.0, len(content_terms(text)) / MIN_CONTENT_TERMS)
        if personal:
            cues[i] = any(w in FIRST_PERSON_WORDS for w in words) + any(w in PERSONAL_CUES for w in words)
    score = WEIGHT_CENTRALITY * centrality + WEIGHT_FACTS * _normalized(facts)
    if personal:
        score = score + WEIGHT_PERSONAL * cues / 2
        score = score * np.array([QUESTION_FACTOR if s.rstrip().endswith(("?", "？")) else 1.0 for s in sentences])
    return score * length, similarity


def _is_filler(sentence: str, speaker_terms: set[str]) -> bool:
    """Greetings, thanks and interjections ("Good, thanks!", "Wow, Ann!"): nothing but filler words and names."""
    return all(t in FILLER_WORDS or t in speaker_terms for t in content_terms(sentence))


def _render(sentences: list[_Sentence], chosen: set[int]) -> str:
    lines: dict[int, list[str]] = {}
    speakers: dict[int, str] = {}
    for i in sorted(chosen):
        lines.setdefault(sentences[i].line, []).append(sentences[i].text)
        speakers[sentences[i].line] = sentences[i].speaker
    return "\n".join(
        (f"{speakers[ln]}: " if speakers[ln] else "") + _join(parts) for ln, parts in sorted(lines.items())
    )


def _join(sentences: list[str]) -> str:
    """Sentences of one line joined as they were split: by a space, or by nothing after CJK punctuation."""
    out = sentences[0]
    for s in sentences[1:]:
        out += ("" if out.endswith(("。", "！", "？")) else " ") + s
    return out


def summarize(transcript: str, max_tokens: int, counter: str = "cl100k_base", personal: bool = False) -> str:
    """The best sentences of `transcript` within `max_tokens`, never longer than the transcript itself.

    `personal` favours first-person preferences, habits and facts (the memory summary).
    """
    speakers, sentences = _units(transcript)
    if not sentences or max_tokens <= 0:
        return ""
    count = get_counter(counter).count_text
    limit = min(max_tokens, count(transcript))
    score, similarity = score_sentences([s.text for s in sentences], _names(sentences, speakers), personal)
    chosen: set[int] = set()
    redundancy = np.zeros(len(sentences))
    # Lazy greedy MMR: a sentence's value only falls as redundancy grows, so a stale heap entry is an upper bound.
    speaker_terms = {t for s in speakers for t in terms(s)}
    content = [i for i, s in enumerate(sentences) if not _is_filler(s.text, speaker_terms)]
    heap = [(-score[i], i) for i in content]
    heapq.heapify(heap)
    while heap:
        stale, i = heapq.heappop(heap)
        value = score[i] - MMR_REDUNDANCY * redundancy[i]
        if heap and -value > heap[0][0] and -value != stale:
            heapq.heappush(heap, (-value, i))  # another sentence may be better now
            continue
        if count(_render(sentences, chosen | {i})) <= limit:
            chosen.add(i)
            redundancy = np.maximum(redundancy, similarity[i].toarray().ravel())
    if not chosen:  # no sentence fits: the best one's first words, as a provider would cut at max_tokens
        top = sentences[max(content or range(len(sentences)), key=lambda i: (score[i], -i))]
        words = top.text.split()
        while words and count(_render([_Sentence(0, top.speaker, " ".join(words))], {0})) > limit:
            words.pop()
        return _render([_Sentence(0, top.speaker, " ".join(words))], {0}) if words else ""
    return _render(sentences, chosen)
