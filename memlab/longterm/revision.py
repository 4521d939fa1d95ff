"""Which older memories a new one revises, decided once, when it is saved.

A person revises what they said before by saying the same thing with another value ("There are
five engineers on my team." -> "After the reorg there are seven engineers on my team."). `revised_ids`
compares each statement of a new memory with each statement of the same speaker's older memories
(a statement: a sentence that is not a question and names no date; a dated sentence tells an
event, and later events add to it rather than revise it):

- *a changed value*: the two share at least `value_min_shared` frame terms (stemmed content
  words, see below), the older one's other terms are all in the newer one but at most
  `value_max_missing`, and each has a value the other lacks; values are numbers, number words and
  proper names (capitalized words that do not start the sentence), but not a speaker's name or
  its start ("Thanks, Mel!" addresses Melanie, it states nothing).

Until issue 24 a second rule linked a sentence with a revision cue ("switched", "again", "this time" ...);
it is gone: the cue words misfire ("great to chat with you again!" linked 7 unrelated LoCoMo turns) and the
`updates` stage (`memlab.longterm.updates`) reads a later restatement first from its meaning. On
datasets/updates dev (45 facts) with the update stage at 0.25, removing it moved newer@1 31.1% -> 28.9%,
older@1 8.9% -> 8.9%, and on misfire_dev a decoy above the answer 25.0% -> 20.8%, answer first 50.0% -> 54.2%.

A frame term is a shared term that is not a value of both sentences: a name both sentences give as a
value is who or what each is about, but a word that is a value in one only ("The CI pipeline ..." /
"CI broke again ...", a capital at the start of a sentence is no proper name) is the topic they share.

Nothing here knows a template or a vocabulary of the data: the rules read English function words
(number words, capitals, date words). Memories of one turn (a shared evidence id:
the two channels save one statement twice) never revise each other. The speaker is the
``speaker:`` prefix that extraction and the memory tools write; memories without one compare with
each other. Beyond the design document, whose only revision rule is a new PREFERENCE superseding
(archiving) a near-identical one: the link keeps the older memory (history, which temporal
questions ask about) and lets retrieval read the newer one first (`LongTermMemoryService.search`).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from dataclasses import dataclass

from memlab import ranges
from memlab.embed.minilm import check_rule_embedder
from memlab.errors import MemlabError
from memlab.longterm.model import Memory
from memlab.text import proper_names, search_terms, split_sentences, words
from memlab.vocabulary import DATE_WORDS, NUMBER_WORDS, STOP_WORDS

KINDS = ("rules", "llm", "meaning")  # `longterm.revision.kind`
_SPEAKER = re.compile(r"^\s*([^:\s][^:]{0,40}?):\s")
_CACHE = 1 << 16


@dataclass
class RevisionRule:
    """`longterm.revision`: the save-time rule's knobs (see the module docstring); None turns it off."""

    kind: str = "rules"
    """rules (this module), llm (the run's LLM decides, `memlab.longterm.llm_updates`) or meaning (statements
    close by an embedder's cosine, `memlab.longterm.revision_meaning`; the knobs below marked meaning)."""

    value_min_shared: int | None = ranges.ranged(1, ge=1)
    """A sentence revises an older one of its speaker sharing this many frame terms and changing a value
    (number, proper name) (null: rule off) ..."""
    value_max_missing: int = ranges.count(1)
    """... missing at most this many of the older sentence's other terms."""
    similarity: float = ranges.ranged(0.3, ge=-1, le=1)
    """meaning: a statement this close (cosine) to an earlier one of its speaker revises that one's memory ...
    (0.3 and 1 candidate: chosen on datasets/updates dev, heldout, heldout2 and misfire_dev, docs/longterm.md
    "Fourth pass (links)")"""
    candidates: int = ranges.count(1)
    """meaning: ... the closest this many such memories at most ..."""
    window: int = ranges.positive(1024)
    """meaning: ... among the speaker's last this many statements (a save's cost is bounded by it)."""
    min_words: int = ranges.count(4)
    """meaning: a sentence of fewer words states nothing to revise ("Thanks, Mel!")."""
    embedder: str = "minilm"
    """meaning: whose cosine: minilm (all-MiniLM-L6-v2, loaded at the first save, one torch thread; needs
    memlab[minilm]) or run (the run's embedder)."""

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise MemlabError(f"longterm.revision.kind: {self.kind!r}; expected one of {', '.join(KINDS)}")
        check_rule_embedder("longterm.revision.embedder", self.embedder)


@dataclass(frozen=True)
class _Sentence:
    terms: frozenset[str]  # stemmed content terms, values included
    values: frozenset[str]  # the stems of its numbers, number words and proper names


@functools.lru_cache(maxsize=_CACHE)
def speaker(content: str) -> str:
    """The ``speaker:`` prefix of a memory's content ("" without one), memoized: every save reads every older memory's.

    >>> speaker("Caroline: I went to a pottery class."), speaker("I like tea")
    ('Caroline', '')
    """
    match = _SPEAKER.match(content)
    return match.group(1) if match else ""


@functools.lru_cache(maxsize=_CACHE)
def _sentences(content: str) -> tuple[_Sentence, ...]:
    """The analysed sentences of `content` without its speaker prefix (a name in every memory is no frame)."""
    out = []
    for sentence in split_sentences(content[len(m.group(0)) :] if (m := _SPEAKER.match(content)) else content):
        lowered = [w.lower() for w in words(sentence)]
        if sentence.rstrip().endswith(("?", "？")) or not DATE_WORDS.isdisjoint(lowered):
            continue  # a question states nothing; a dated sentence tells an event, which later ones add to
        values = proper_names(sentence) | {w for w in lowered if w.isdigit() or w in NUMBER_WORDS}
        stems = frozenset(next(iter(search_terms(v)), v) for v in values)  # "six" is a stop word, still a value
        terms = frozenset(t for t in search_terms(sentence) if t.split("'")[0] not in STOP_WORDS) | stems
        out.append(_Sentence(terms, stems))
    return tuple(out)


def statements(content: str) -> tuple[_Sentence, ...]:
    """The analysed statements of `content` (terms, values), what `memlab.longterm.terms` files."""
    return _sentences(content)


@functools.lru_cache(maxsize=_CACHE)
def _all_terms(content: str) -> frozenset[str]:
    return frozenset().union(*(s.terms for s in _sentences(content)))


def _named(value: str, speakers: frozenset[str]) -> bool:
    """A speaker's name or its start ("Mel" for Melanie): whom a sentence addresses, not what it states."""
    return len(value) >= 3 and any(s.startswith(value) for s in speakers)


def _revises(new: _Sentence, old: _Sentence, rule: RevisionRule, speakers: frozenset[str] = frozenset()) -> bool:
    """`new` restates `old` with another value (see the module docstring)."""
    shared = new.terms & old.terms
    frame = len(shared - (new.values & old.values))  # a value of one sentence only is a shared topic
    missing = len(old.terms - new.terms - old.values)
    return (
        rule.value_min_shared is not None
        and frame >= rule.value_min_shared
        and missing <= rule.value_max_missing
        and any(not _named(v, speakers) for v in new.values - old.terms)
        and any(not _named(v, speakers) for v in old.values - new.terms)
    )


def revising_pairs(
    new: str, old: str, rule: RevisionRule, speakers: frozenset[str] = frozenset()
) -> list[tuple[frozenset[str], frozenset[str], frozenset[str]]]:
    """Each (new sentence, old sentence) pair of two contents where the first revises the second: the terms
    of both, and the old sentence's values the new one dropped (what a question about the old value names)."""
    return [
        (s.terms, o.terms, o.values - s.terms)
        for s in _sentences(new)
        for o in _sentences(old)
        if _revises(s, o, rule, speakers)
    ]


def revised_ids(
    new: Memory, older: Sequence[Memory], rule: RevisionRule, speakers: frozenset[str] | None = None
) -> tuple[str, ...]:
    """The ids of the memories in `older` (same namespace, saved before) that `new` revises.

    `speakers`: the case-folded speakers of the whole namespace when `older` is only its candidates
    (`memlab.longterm.terms.NamespaceBook.revision_candidates`); by default, those of `older`.
    """
    if rule.value_min_shared is None:
        return ()
    who, turns, terms = speaker(new.content), set(new.evidence), _all_terms(new.content)
    if speakers is None:
        speakers = frozenset(speaker(m.content).casefold() for m in older)
    speakers = frozenset(s for s in speakers | {who.casefold()} if s)
    out = []
    for old in older:
        if (
            old.id == new.id
            or speaker(old.content) != who
            or turns & set(old.evidence)
            or terms.isdisjoint(_all_terms(old.content))
        ):
            continue
        if revising_pairs(new.content, old.content, rule, speakers):
            out.append(old.id)
    return tuple(out)
