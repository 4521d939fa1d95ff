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

import bisect
import functools
import heapq
import itertools
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING

import numpy as np

from memlab.llm.corpus import Corpus, Sentence, corpus
from memlab.llm.tfidf import as_matrix, tfidf
from memlab.tokens import TiktokenCounter, _CachedCounter, get_counter

if TYPE_CHECKING:
    from scipy import sparse

_NOT_TIKTOKEN_SPACE = "\x1c\x1d\x1e\x1f"  # whitespace for `str.split`, not for tiktoken (looked for with `in`: memchr)
WORD_PREFIX_CHARS = 16  # characters per word of budget in the prefix `_capped_count` splits first
TEXTRANK_DAMPING = 0.85  # Mihalcea & Tarau (2004), after PageRank
TEXTRANK_ITERATIONS = 50
MMR_REDUNDANCY = 0.5  # weight of the similarity to what is already kept
WEIGHT_CENTRALITY = 1.0
WEIGHT_FACTS = 1.0
WEIGHT_PERSONAL = 1.0  # memory summaries only
QUESTION_FACTOR = 0.5  # a question states no fact; a memory summary halves its score


def _textrank(similarity: sparse.csr_matrix) -> np.ndarray:
    """PageRank over a weighted undirected graph (power iteration; isolated nodes keep the base rank).

    `similarity` is symmetric with sorted rows. The arithmetic is the reference's (`setdiag(0)`,
    ``(diags(1 / out weight) @ graph).T``) without building those matrices: the transposed
    transition matrix has the graph's layout, its entry (j, i) being ``graph[j, i] / out_weight[i]``.
    The self-loops stay in that layout with weight 0.0: each adds ``0.0 * rank`` (+0.0) to a sum of
    non-negative products, which leaves it as it was, so the rows need not be compressed.
    Each iteration calls the routine ``transition_t @ rank`` runs (scipy's ``csr_matvec``, adding
    into a zeroed vector) without the operator's dispatch, and scales and shifts that vector in
    place: the same floats, for a third less time on a replay's many small graphs.
    """
    from scipy.sparse import _sparsetools  # imported on use: scipy takes a third of a second

    n = similarity.shape[0]
    indptr, indices, data = similarity.indptr, similarity.indices, similarity.data
    is_loop = indices == np.repeat(np.arange(n), np.diff(indptr))
    loops = np.flatnonzero(is_loop)
    # The graph's row sums as its `sum(axis=1)` adds them (`np.add.reduceat` over the non-empty rows, no self-loop).
    per_row = np.diff(indptr)
    per_row[indices[loops]] -= 1
    starts = np.concatenate(([0], np.cumsum(per_row)))
    out_weight = np.zeros(n)
    nonempty = np.flatnonzero(per_row)
    if len(nonempty):
        out_weight[nonempty] = np.add.reduceat(data[~is_loop], starts[nonempty])
    inverse = np.divide(1.0, out_weight, out=np.zeros_like(out_weight), where=out_weight > 0)
    transition_t = data.copy()  # ``data * inverse[indices]``, each product in one C loop (`csr_scale_columns`)
    _sparsetools.csr_scale_columns(n, n, indptr, indices, transition_t, inverse)
    transition_t[loops] = 0.0
    base = (1 - TEXTRANK_DAMPING) / n
    rank, step = np.full(n, 1.0 / n), np.empty(n)
    for _ in range(TEXTRANK_ITERATIONS):
        step.fill(0.0)
        _sparsetools.csr_matvec(n, n, indptr, indices, transition_t, rank, step)
        step *= TEXTRANK_DAMPING
        step += base
        rank, step = step, rank
    return rank


def _normalized(values: np.ndarray) -> np.ndarray:
    top = values.max(initial=0.0)
    return values / top if top > 0 else np.zeros_like(values)


def score_sentences(
    sentences: list[str], names: set[str], personal: bool = False
) -> tuple[np.ndarray, sparse.csr_matrix]:
    """Each sentence's score and the sentences' cosine similarity matrix (sparse, rows sorted)."""
    return _score(Corpus.of(sentences), names, personal)


def _similarity(corpus: Corpus) -> sparse.csr_matrix:
    """The sentences' cosine similarities (their TF-IDF vectors' Gram matrix), rows sorted."""
    from scipy import sparse  # imported on use: it takes a third of a second

    n = len(corpus.sentences)
    if not corpus.term_lengths.any():  # no content terms at all (only stop words or punctuation)
        return sparse.csr_matrix((n, n))
    counts = as_matrix(corpus.count_columns, corpus.count_values, corpus.term_lengths, len(corpus.columns))
    return sparse.csr_matrix(_gram(tfidf(counts)), shape=(n, n))


def _gram(vectors: sparse.csr_array) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``vectors @ vectors.T`` with sorted rows, as (data, indices, indptr), by the routines that product runs.

    The operator transposes `vectors` to CSR (``csr_tocsc``), counts and computes the product
    (``csr_matmat_maxnnz``, ``csr_matmat``), each entry (i, j) adding the products of the terms
    both use in row i's order. That is symmetric bit for bit (the same products in the same order
    from either side), so its CSC form (``csr_tocsc``), whose columns come out sorted, is its sorted
    CSR form. Called directly, the routines skip four sparse objects' checks per request, and the
    count gives way to a bound computed with numpy (the product's arrays are only allocated longer).
    """
    from scipy.sparse import _sparsetools  # imported on use: scipy takes a third of a second

    n, m = vectors.shape
    # The product's entries at most (each term pairs the sentences that use it); it writes where its rows end.
    bound = int(np.bincount(vectors.indices, minlength=m)[vectors.indices].sum())
    index = np.int32 if bound <= np.iinfo(np.int32).max else np.int64
    v_indptr, v_indices = vectors.indptr.astype(index), vectors.indices.astype(index)
    t_indptr, t_indices, t_data = np.empty(m + 1, index), np.empty(vectors.nnz, index), np.empty(vectors.nnz)
    _sparsetools.csr_tocsc(n, m, v_indptr, v_indices, vectors.data, t_indptr, t_indices, t_data)
    p_indptr, p_indices, p_data = np.empty(n + 1, index), np.empty(bound, index), np.empty(bound)
    _sparsetools.csr_matmat(
        n, n, v_indptr, v_indices, vectors.data, t_indptr, t_indices, t_data, p_indptr, p_indices, p_data
    )
    size = int(p_indptr[-1])
    indptr, indices, data = np.empty(n + 1, index), np.empty(size, index), np.empty(size)
    _sparsetools.csr_tocsc(n, n, p_indptr, p_indices, p_data, indptr, indices, data)
    return data, indices, indptr


def _score(corpus: Corpus, names: set[str], personal: bool) -> tuple[np.ndarray, sparse.csr_matrix]:
    similarity = _similarity(corpus)
    centrality = _normalized(_textrank(similarity))
    score = WEIGHT_CENTRALITY * centrality + WEIGHT_FACTS * _normalized(corpus.facts(names))
    if personal:
        score = score + WEIGHT_PERSONAL * corpus.cues / 2
        score = score * np.where(corpus.question, QUESTION_FACTOR, 1.0)
    return score * corpus.length, similarity


def _render(sentences: Sequence[Sentence], chosen: set[int]) -> str:
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

    def __init__(self, sentences: Sequence[Sentence], counter: _CachedCounter) -> None:
        self.sentences = sentences
        self.counter = counter
        self.line_tokens = counter.line_tokens if isinstance(counter, TiktokenCounter) else None
        self.lines: dict[int, list[int]] = {}  # line -> kept sentence indexes, in order
        self.texts: dict[int, str] = {}
        self.tokens: dict[int, tuple[int, int]] = {}  # line -> line_tokens of its text
        self.with_newlines = 0  # sum of every kept line's tokens with its newline
        self.additive = True  # every kept line is separable
        self.last = -1  # the last kept line
        self.newline = 0  # what the last kept line's newline adds to its tokens

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
        sentence = self.sentences[i]
        line = sentence.line
        if self.additive and self.line_tokens and line not in self.lines:  # the usual candidate, inlined
            alone = _alone(self.counter, sentence.speaker, sentence.text)[1]
            if alone is not None:  # it becomes the last line, or goes before the last one, whose newline counts
                return self.with_newlines + (alone[1] if line > self.last else alone[0] - self.newline)
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
        self.newline = self.tokens[self.last][0] - self.tokens[self.last][1]

    def line_mates(self) -> Iterator[int]:
        """The sentences that are not kept but share a line with a kept one (sentences are in line order)."""
        for line, kept in self.lines.items():
            first, last = kept[0], kept[-1]
            while first > 0 and self.sentences[first - 1].line == line:
                first -= 1
            while last + 1 < len(self.sentences) and self.sentences[last + 1].line == line:
                last += 1
            yield from (i for i in range(first, last + 1) if i not in kept)


_ALONE_COSTS: dict[str, tuple[tuple[Sentence, ...], np.ndarray]] = {}  # per counter: the last corpus's sentences
_ALONE_LOCK = threading.Lock()


def _alone_costs(sentences: tuple[Sentence, ...], counter: TiktokenCounter) -> np.ndarray:
    """Per sentence, the `line_tokens` of its line alone (-1, -1: not separable), extended from the last request's.

    A replay's transcript grows by a line between requests, so only the new sentences are counted.
    """
    with _ALONE_LOCK:
        known, costs = _ALONE_COSTS.get(counter.name, ((), np.zeros((0, 2), np.int64)))
    if sentences[: len(known)] != known:  # the sentences themselves: the same speaker and text cost the same
        known, costs = (), np.zeros((0, 2), np.int64)
    new = [_alone(counter, s.speaker, s.text)[1] or (-1, -1) for s in sentences[len(known) :]]
    if new:
        costs = np.concatenate([costs, np.array(new, np.int64).reshape(-1, 2)])
    with _ALONE_LOCK:
        _ALONE_COSTS[counter.name] = (sentences, costs)
    return costs


class _Room:
    """Whether any candidate still fits the budget: once none does, the greedy loop can stop, with the same summary.

    After the last sentence it keeps, the loop only pops candidates that are re-pushed or do not fit,
    and changes nothing; stopping there skips those pops (most of a request's). A candidate alone on
    its line costs what `_Selection.count_with` adds for it: its `line_tokens` with the newline less
    the last kept line's newline when it goes before that line, else without. So no such candidate
    fits when the cheapest of them does not, with the cheaper of the two costs taken for each; the
    others (on a kept line, or on a line that is not separable) are counted exactly.
    """

    def __init__(self, selection: _Selection, candidates: np.ndarray, costs: np.ndarray) -> None:
        self.selection = selection
        separable = costs[candidates, 0] >= 0
        self.exact = candidates[~separable].tolist()
        counted = candidates[separable]
        self.costs = costs
        # Candidates alone on a line, cheapest first by each cost, and how far each list has been read.
        self.orders = [counted[np.argsort(costs[counted, part], kind="stable")].tolist() for part in (0, 1)]
        self.read = [0, 0]
        self.is_candidate = np.zeros(len(costs), bool)
        self.is_candidate[candidates] = True

    def _cheapest(self, part: int) -> int | None:
        """The least cost (`part` of `line_tokens`) of a candidate whose line has nothing kept."""
        order, lines, sentences = self.orders[part], self.selection.lines, self.selection.sentences
        k = self.read[part]
        while k < len(order) and sentences[order[k]].line in lines:  # counted exactly, or kept
            k += 1
        self.read[part] = k
        return int(self.costs[order[k], part]) if k < len(order) else None

    def none_fits(self, limit: int) -> bool:
        selection = self.selection
        if not selection.additive:
            return False
        room = limit - selection.with_newlines
        with_newline, alone = self._cheapest(0), self._cheapest(1)
        if with_newline is not None and with_newline - selection.newline <= room:
            return False
        if alone is not None and alone <= room:
            return False
        mates = (i for i in selection.line_mates() if self.is_candidate[i])
        return all(selection.count_with(i) > limit for i in itertools.chain(self.exact, mates))


def _capped_count(transcript: str, max_tokens: int, counter: _CachedCounter) -> int:
    """``min(max_tokens, count(transcript))``: every word holds at least one token, so a long text is not counted.

    tiktoken splits text into pieces that never join two whitespace-separated words, and each piece
    is at least one token; other counters are asked. (U+001C..U+001F separate words for Python but
    are not whitespace for tiktoken, so a text with one is counted.) A prefix has at most as many
    words as the whole text, so the words are first looked for in a prefix that usually holds enough.
    """
    if isinstance(counter, TiktokenCounter) and not any(c in transcript for c in _NOT_TIKTOKEN_SPACE):
        for text in (transcript[: WORD_PREFIX_CHARS * max_tokens], transcript):
            if len(text.split()) >= max_tokens:
                return max_tokens
    return min(max_tokens, counter.count_text(transcript))


def extractive_summary(transcript: str, max_tokens: int, counter: str = "cl100k_base", personal: bool = False) -> str:
    """The best sentences of `transcript` within `max_tokens`, never longer than the transcript itself.

    `personal` favours first-person preferences, habits and facts (the memory summary).

    Args:
        transcript: Transcript lines (`speaker: text`, as `memlab.llm.prompts.render_transcript` writes them).
        max_tokens: The summary's budget in tokens.
        counter: The token counter of the budget (a tiktoken encoding or model, or estimate).
        personal: Favour the speakers' first-person statements (a memory summary).
    """
    sentences = (found := corpus(transcript)).sentences
    if not sentences or max_tokens <= 0:
        return ""
    tokens = get_counter(counter)
    count = tokens.count_text
    limit = _capped_count(transcript, max_tokens, tokens)
    score, similarity = _score(found, found.names(), personal)
    selection = _Selection(sentences, tokens)
    # Python floats (the same doubles) in the loop: indexing numpy arrays per candidate cost more than the rest.
    scores, redundancy = score.tolist(), [0.0] * len(sentences)
    # Lazy greedy MMR: a sentence's value only falls as redundancy grows, so a stale heap entry is an upper bound.
    content = np.flatnonzero(found.content).tolist()  # greetings, thanks, interjections are not candidates
    heap = [(-scores[i], i) for i in content]
    heapq.heapify(heap)
    room = None
    if isinstance(tokens, TiktokenCounter):
        room = _Room(selection, np.flatnonzero(found.content), _alone_costs(sentences, tokens))
    while heap:
        stale, i = heapq.heappop(heap)
        value = scores[i] - MMR_REDUNDANCY * redundancy[i]
        if heap and -value > heap[0][0] and -value != stale:
            heapq.heappush(heap, (-value, i))  # another sentence may be better now
            continue
        if selection.count_with(i) <= limit:
            selection.add(i)
            row = slice(similarity.indptr[i], similarity.indptr[i + 1])
            for j, similar in zip(similarity.indices[row].tolist(), similarity.data[row].tolist(), strict=True):
                if similar > redundancy[j]:  # redundancy = max(redundancy, similarity row i)
                    redundancy[j] = similar
            if room is not None and room.none_fits(limit):
                break
    chosen = {i for kept in selection.lines.values() for i in kept}
    if not chosen:  # no sentence fits: the best one's first words, as a provider would cut at max_tokens
        top = sentences[max(content or range(len(sentences)), key=lambda i: (score[i], -i))]
        return first_words(top, count, limit)
    summary = _render(sentences, chosen)
    # Sentences are rejoined with a space ("0?B" splits into "0?" and "B"): a text that fits whole is its own summary.
    whole = transcript.strip()
    return whole if len(summary) > len(whole) and count(whole) <= limit else summary


def first_words(sentence: Sentence, count: Callable[[str], int], limit: int) -> str:
    """`sentence` rendered with the most of its first words whose line counts at most `limit` ("": not one word).

    The words were dropped from the end one at a time, each time counting the whole line again: quadratic (a
    50,000-character sentence without an end mark took 10.6 s). Each word adds its own tokens (the counters
    split text at whitespace before encoding; the estimate grows with the characters), so whether a prefix fits
    only turns false as it grows, and bisection finds the same prefix in O(log n) counts.
    """
    words = sentence.text.split()

    def line(n: int) -> str:
        return _render([Sentence(0, sentence.speaker, " ".join(words[:n]))], {0})

    fitting = bisect.bisect_left(range(1, len(words) + 1), True, key=lambda n: count(line(n)) > limit)
    return line(fitting) if fitting else ""


def first_sentences(transcript: str, max_tokens: int, counter: str = "cl100k_base") -> str:
    """The lead baseline: the transcript's first sentences, in the same format, within `max_tokens`.

    Args:
        transcript: Transcript lines (`speaker: text`).
        max_tokens: The summary's budget in tokens.
        counter: The token counter of the budget.
    """
    sentences = corpus(transcript).sentences
    count = get_counter(counter).count_text
    chosen: set[int] = set()
    for i in range(len(sentences)):
        if count(_render(sentences, chosen | {i})) > max_tokens:
            break
        chosen.add(i)
    return _render(sentences, chosen)
