"""Every English (and the few Chinese) word list and cue regex memlab's rules read, in one place.

Each entry says where it comes from, which rule reads it, and what is known of its effect. The rules
import from here (`memlab.text` re-exports the general lists); no other module of `memlab/` writes a
regex or a tuple of plain words (tests/test_vocabulary.py greps for them). Metric code reads only the
``METRIC_`` lists, never a rule's list: a metric that shared the vocabulary of the rule it judges would
move with it (issue 24: the update metric and the update rule shared their cue words).

Settled overlaps (issue 24, item 6): the two update cue lists (service.py's UPDATE_CUE, revision.py's
REVISION_CUE, 19 shared words) are gone: `memlab.longterm.updates` decides from meaning; there is one list
of date words (`DATE_WORDS`, which `DATED` is built from);
two small-talk lists stay because they answer two questions (`SMALL_TALK`: is a whole turn chatter,
phrases included; `FILLER_WORDS`: is one word chatter), and a test checks that every filler greeting
the phrase list needs is in both.
"""

from __future__ import annotations

import re
from importlib import resources


def word_set(words: str) -> frozenset[str]:
    """A vocabulary written as one space-separated string."""
    return frozenset(words.split())


def _alternation(words: frozenset[str]) -> str:
    """A regex alternation of `words`, longest first (so "sept" wins over "sep")."""
    return "|".join(sorted(words, key=lambda w: (-len(w), w)))


def _stop_words() -> frozenset[str]:
    """scikit-learn's English stop words, shipped as data so that importing memlab does not import sklearn."""
    text = resources.files("memlab").joinpath("english_stop_words.txt").read_text(encoding="utf-8")
    return frozenset(w for w in text.split("\n") if w and not w.startswith("#"))


# --- general lists (memlab.text re-exports them) ------------------------------------------------

# Source: scikit-learn 1.9.1 ENGLISH_STOP_WORDS (Glasgow IR group list), memlab/english_stop_words.txt.
# Used by: `memlab.text.content_terms` (TF-IDF / BM25 term weighting), revision.py's frame terms.
# Effect: not measured on its own; it is the term filter of every BM25 figure in docs/longterm.md.
STOP_WORDS = _stop_words()

# Source: written for memlab (months, their abbreviations, weekdays, relative day words).
# Used by: revision.py (a dated sentence tells an event, it revises nothing) and `DATED` below.
# Effect: not measured on its own.
MONTHS = word_set("january february march april may june july august september october november december")
WEEKDAYS = word_set("monday tuesday wednesday thursday friday saturday sunday")
RELATIVE_DAYS = word_set("yesterday today tomorrow tonight")
DATE_WORDS = (
    MONTHS
    | WEEKDAYS
    | RELATIVE_DAYS
    | word_set("jan feb mar apr jun jul aug sep sept oct nov dec weekend week month year ago last next")
)

# Source: English pronoun paradigm, as `memlab.text.terms` spells it; 我 also starts 我们.
# Used by: `speaks_in_first_person` (extraction keeps turns about the speaker), policy.py.
# Effect: not measured on its own.
FIRST_PERSON_SINGULAR = word_set("i i'm i've i'd i'll me my mine myself 我")
FIRST_PERSON_WORDS = FIRST_PERSON_SINGULAR | word_set("we we're we've we'd we'll us our ours ourselves")

# Source: written for memlab; articles, pronouns, auxiliaries, prepositions, conjunctions, question words.
# Used by: extract_rules.content_words (is a word grammar rather than content?), the extractive summarizer.
# Effect: not measured on its own.
FUNCTION_WORDS = word_set(
    "a an the and or but nor of to in on at by for with from as into onto about than then so "
    "is are was were be been being am do does did has have had will would shall should can could "
    "i me my mine we us our you your he him his she her it its they them their this that these those there here "
    "what which who whom whose when where why how not no yes"
)

# Source: written for memlab; greetings, thanks, assent, interjections (one word each).
# Used by: extract_rules.content_words (a turn of filler holds no memory).
# Effect: not measured on its own.
FILLER_WORDS = word_set(
    "hi hey hello bye thanks thank welcome yes yeah yep yup no nope ok okay sure right fine good great nice cool wow "
    "awesome amazing totally agree exactly absolutely really oh ah haha lol hmm glad sounds fun "
    "你好 谢谢 好的 是的 对 嗯 哈哈 哇 不错"
)

# Source: English cardinal number words (one excluded: mostly a pronoun, "the blue one").
# Used by: revision.py (a number word is a value a revision changes: "five engineers" -> "seven").
# Effect: not measured on its own.
NUMBER_WORDS = word_set(
    "zero two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen "
    "seventeen eighteen nineteen twenty thirty forty fifty sixty seventy eighty ninety hundred thousand million dozen"
)

# --- long-term memory: extraction and its skip layers -------------------------------------------

# Source: written for memlab (greetings, thanks, farewells, assent as whole phrases; Chinese equivalents).
# Used by: longterm/extraction.py's small-talk skip layer: a turn with fewer than two content words left
# once these are removed is not extracted. Effect: not measured on its own (the layer's skips are counted
# per run as `longterm.skip.small_talk`).
SMALL_TALK = re.compile(
    r"\b(hi|hey|hello|hiya|yo|good (morning|afternoon|evening|night)|thanks?( you)?( so much| a lot)?|thx|bye|"
    r"goodbye|see (you|ya)( later| soon)?|take care|talk (to you )?(later|soon)|have a (good|great|nice) \w+|"
    r"how are you( doing)?|how('s| is) it going|what's up|nice to (meet|see) you|good to (see|hear from) you|"
    r"you too|no problem|you're welcome|sounds good|cool|great|awesome|wow|lol|haha+|ok(ay)?|sure|bye-bye)\b|"
    r"你好|您好|谢谢|再见|哈哈+|好的|早上好|晚安|没问题",
    re.I,
)

# Source: written for memlab; verbs and adverbs of preferences, habits and durable facts (the memory
# prompt's three kinds). Used by: llm/corpus.py, the offline extractive model's sentence scores.
# Effect: not measured on its own.
PERSONAL_CUES = word_set(
    "love loves loved like likes enjoy enjoys prefer prefers favorite favourite hate hates dislike "
    "always usually often never every habit routine allergic vegetarian vegan born live lives living "
    "work works working job study studying moved married kids children son daughter wife husband "
    "plan plans planning want wants hope dream goal "
    "喜欢 喜爱 热爱 讨厌 偏好 总是 经常 通常 每天 习惯 过敏 素食 住在 工作 结婚 孩子 计划 希望 打算"
)

# Source: written for memlab. Used by: llm/extract_rules.py: a sentence addressed to the listener ("you",
# "please": "From now on, please write examples in Go.") is a standing request. Effect: not measured.
SECOND_PERSON = re.compile(r"\b(you|you're|you've|your|yours|yourself|please)\b|你|您", re.I)

# Source: written for memlab. Used by: llm/extract_rules.py types a sentence PROCEDURE ("fixed it by ...").
# Effect: not measured on its own.
PROCEDURE_CUE = re.compile(
    r"\b(fixed|solved|resolved|figured out|worked out|managed to|the trick (is|was)|the fix|by (changing|switching|"
    r"using|restarting|adding|removing|setting)|step[s]? (is|are|was|were)|workaround)\b|解决|修复|步骤",
    re.I,
)

# Source: written for memlab. Used by: llm/extract_rules.py types a sentence PREFERENCE ("I really love ...").
# Effect: not measured on its own.
PREFERENCE_CUE = re.compile(
    r"\b(i|we|i'd|i'm|i've)( really| also| just| totally| always| kind of)? (love|like|enjoy|prefer|hate|dislike|"
    r"adore|would rather|can't stand|am into|am a fan of|am passionate about|am obsessed with|dream of)\b|"
    r"\b(my|our) favou?rite\b|喜欢|偏好|讨厌",
    re.I,
)

# Source: the parts of `DATE_WORDS` (the one date list: before issue 24 this regex spelled its own months and
# weekdays) in the phrases that date a sentence: "yesterday", "last week", "on Monday", "in March", a year.
# Used by: llm/extract_rules.py types a dated sentence EPISODE. Effect: not measured on its own.
DATED = re.compile(
    rf"\b({_alternation(RELATIVE_DAYS)}|ago|recently|last (night|week|weekend|month|year|summer|winter|spring|fall|"
    rf"{_alternation(WEEKDAYS)})|this (morning|week|weekend|month|year|past)|next (week|month|year)|"
    rf"(on|since|in|by) ({_alternation(WEEKDAYS | MONTHS)})|(19|20)\d\d)\b|昨天|今天|上周|上个月|去年|明天",
    re.I,
)

# --- the memory-tool policy (longterm/policy.py) --------------------------------------------------

# Source: English question words and auxiliaries that start a question. Used by: policy.py's
# `asks_about_past` (a question without "?"). Effect: not measured on its own.
QUESTION_START = re.compile(
    r"^\s*(who|what|when|where|which|why|how|did|do|does|have|has|had|was|were|is|are|can|could)\b", re.I
)

# Source: English auxiliary verbs (the paradigm of be, do, have and the modals), split by tense.
# Used by: longterm/updates.py's `asks_about_now`: a question whose first auxiliary is past ("When did ...",
# "What was ...") asks about an event, so the `updates` stage leaves its ranking alone. Effect: measured in
# docs/longterm.md ("Updated facts in natural wording", the question-tense rows).
PRESENT_AUXILIARIES = word_set("is are am do does has have can will")
PAST_AUXILIARIES = word_set("was were did had could would")

# Source: written for memlab. Used by: policy.py: a question that refers back ("do you remember", "last
# week") makes the offline policy call memory_search. Effect: not measured on its own.
PAST_REFERENCE = re.compile(
    r"\b(remember|recall|remind me|last (time|week|month|year|weekend|night)|did (i|we|you)|have i|had i|"
    r"told you|i (said|mentioned|told)|you (said|mentioned)|mentioned|earlier|before|ago|previously|"
    r"what was|when was|used to)\b|记得|上次|之前",
    re.I,
)

# Source: written for memlab. Used by: llm/extractive.py answers a temporal question with a session date.
# Effect: not measured on its own.
TEMPORAL_QUESTION = re.compile(
    r"^\s*(when|what (year|month|day|date|time)|how long)\b|什么时候|哪一?年|几月|哪天", re.I
)

# --- metrics: their own lists, shared with no rule -------------------------------------------------

# Source: the same grammar words as `FUNCTION_WORDS` at the time of the split (issue 24), kept apart so that
# tuning the extraction rule's list cannot move the retention metric that judges it.
# Used by: metrics/retention.py's content words.
METRIC_FUNCTION_WORDS = word_set(
    "a an the and or but nor of to in on at by for with from as into onto about than then so "
    "is are was were be been being am do does did has have had will would shall should can could "
    "i me my mine we us our you your he him his she her it its they them their this that these those there here "
    "what which who whom whose when where why how not no yes"
)

# Source: LoCoMo's official evaluation (normalize_answer drops articles and "and"). Used by: metrics/answers.py.
METRIC_LOCOMO_DROPPED_WORDS = re.compile(r"\b(a|an|the|and)\b")

# Source: LoCoMo's adversarial check (an abstention is one of these phrases). Used by: metrics/answers.py.
METRIC_ABSTENTION_PHRASES = ("no information available", "not mentioned")
