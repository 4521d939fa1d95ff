"""What survives: for each probe question, how much of its evidence the context would still carry.

Three shares per probe, averaged over the probes where they are defined (and per category):

- `context.evidence_retention`: evidence ids sent verbatim (in the probe's `kept_ids`);
- `context.evidence_in_summary`: evidence ids not sent verbatim but folded into an accepted
  summary (the `source_ids` of SUMMARY events made for this request, or made by the memory
  layer earlier in the same dialogue, since those summaries replace the stored history);
- `context.answer_coverage`: content words of the gold answer found in the context's text.

>>> content_words("The trip to Lisbon, in May 2023!")
['trip', 'lisbon', 'may', '2023']
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import pandas as pd

from memlab.metrics.longterm import EVIDENCE_KEY as RETRIEVED_EVIDENCE
from memlab.metrics.longterm import EXCLUDED_CATEGORIES, retrieval_scores
from memlab.sim.records import LifecycleRecord, ProbeRecord, Record
from memlab.trace import SUMMARY, Event

RETENTION_METRICS = ("context.evidence_retention", "context.evidence_in_summary", "context.answer_coverage")
# Function words that carry no answer content: articles, pronouns, auxiliaries, prepositions,
# conjunctions. Deliberately short (scikit-learn's list also drops "may", "two", "first", which answers need).
FUNCTION_WORDS = frozenset(
    [
        "a",
        "an",
        "the",
        "and",
        "or",
        "but",
        "nor",
        "of",
        "to",
        "in",
        "on",
        "at",
        "by",
        "for",
        "with",
        "from",
        "as",
        "into",
        "onto",
        "about",
        "than",
        "then",
        "so",
        "is",
        "are",
        "was",
        "were",
        "be",
        "been",
        "being",
        "am",
        "do",
        "does",
        "did",
        "has",
        "have",
        "had",
        "will",
        "would",
        "shall",
        "should",
        "can",
        "could",
        "i",
        "me",
        "my",
        "mine",
        "we",
        "us",
        "our",
        "you",
        "your",
        "he",
        "him",
        "his",
        "she",
        "her",
        "it",
        "its",
        "they",
        "them",
        "their",
        "this",
        "that",
        "these",
        "those",
        "there",
        "here",
        "what",
        "which",
        "who",
        "whom",
        "whose",
        "when",
        "where",
        "why",
        "how",
        "not",
        "no",
        "yes",
    ]
)
# Words: runs of letters or digits; each CJK ideograph is a word of its own (Chinese has no spaces).
_WORD = re.compile(r"[\u4e00-\u9fff]|[^\W_\u4e00-\u9fff]+")


def content_words(text: str) -> list[str]:
    """Lower-cased words of `text` without `FUNCTION_WORDS`."""
    return [w for w in _WORD.findall(text.lower()) if w not in FUNCTION_WORDS]


@functools.lru_cache(maxsize=16)
def _word_set(text: str) -> frozenset[str]:
    """The content words of a context; cached, since a dialogue's probes often share one context."""
    return frozenset(content_words(text))


def summarized_ids(events: Iterable[Event]) -> set[str]:
    """Source ids of every accepted summary among `events` (a rejected summary is not sent)."""
    ids: set[str] = set()
    for e in events:
        if e.kind == SUMMARY and e.data.get("accepted", True):
            ids.update(str(i) for i in e.data.get("source_ids") or ())
    return ids


def probe_retention(probe: ProbeRecord, persisted_summary_ids: Iterable[str] = ()) -> dict[str, float | None]:
    """The three shares for one probe; None where the probe has no evidence or no gold answer."""
    evidence = set(probe.probe.evidence)
    kept = set(probe.kept_ids)
    folded = (summarized_ids(probe.events) | set(persisted_summary_ids)) - kept
    answer_words = set(content_words(probe.probe.answer or ""))
    context_words = _word_set(probe.context_text) if answer_words else frozenset()
    return {
        "context.evidence_retention": len(evidence & kept) / len(evidence) if evidence else None,
        "context.evidence_in_summary": len(evidence & folded) / len(evidence) if evidence else None,
        "context.answer_coverage": len(answer_words & context_words) / len(answer_words) if answer_words else None,
    }


def probe_rows(records: Sequence[Record]) -> list[dict[str, Any]]:
    """One row per probe: its identity, prompt tokens and retention shares (the questions.csv rows)."""
    persisted: dict[str, set[str]] = {}
    rows = []
    for r in records:
        if isinstance(r, LifecycleRecord):
            persisted.setdefault(r.dialogue_id, set()).update(summarized_ids(r.events))
        elif isinstance(r, ProbeRecord):
            rows.append(
                {
                    "dialogue": r.dialogue_id,
                    "probe": r.probe.id,
                    "category": r.probe.category,
                    "question": r.probe.question,
                    "answer": r.probe.answer,
                    "evidence": ";".join(r.probe.evidence),
                    "prompt_tokens": r.prompt_tokens,
                    **probe_retention(r, persisted.get(r.dialogue_id, ())),
                    **{k: v for k, v in r.results.items() if isinstance(v, int | float | str)},
                    **_retrieval_scores(r),
                }
            )
    return rows


def _retrieval_scores(probe: ProbeRecord) -> dict[str, float]:
    """This probe's retrieval metrics at K = 10 over the memories a long-term component retrieved, if any."""
    retrieved = probe.results.get(RETRIEVED_EVIDENCE)
    evidence = [e for e in probe.probe.evidence if e]
    if retrieved is None or not evidence:
        return {}
    scores = retrieval_scores(evidence, [list(m) for m in retrieved], (10,))
    return {f"longterm.{name}": value for name, value in scores.items()}


def mean_by_category(
    rows: Sequence[Mapping[str, Any]],
    names: Sequence[str],
    category: str = "category",
    excluded: Sequence[str] = (),
) -> dict[str, float | None]:
    """Mean of each column in `names` over the rows where it is defined, overall and as `<name>.cat_<c>`.

    Rows of the categories in `excluded` count in their own category only, not in the overall mean.
    """
    out: dict[str, float | None] = {}
    frame = pd.DataFrame(list(rows), columns=[category, *names])
    counted = ~frame[category].astype(str).isin([str(c) for c in excluded])
    for name in names:
        values = pd.to_numeric(frame[name], errors="coerce")
        out[name] = _mean(values[counted])
        for cat, group in values.groupby(frame[category].astype(str), sort=True):
            out[f"{name}.cat_{cat}"] = _mean(group)
    return out


def retention_metrics(
    rows: Sequence[Mapping[str, Any]], excluded: Sequence[str] = EXCLUDED_CATEGORIES
) -> dict[str, float | None]:
    """The retention shares averaged over probes, per question category and overall (minus `excluded`)."""
    return mean_by_category(rows, RETENTION_METRICS, excluded=excluded)


def _mean(values: pd.Series) -> float | None:
    values = values.dropna()
    return float(values.mean()) if len(values) else None
