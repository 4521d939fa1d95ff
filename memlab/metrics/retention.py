"""What survives: for each probe question, how much of its evidence the context would still carry.

Four shares per probe, averaged over the probes where they are defined (and per category):

- `context.evidence_retention`: evidence ids sent verbatim (in the probe's `kept_ids`);
- `context.evidence_fed_to_summary`: evidence ids not sent verbatim but fed to an accepted
  summary (the `source_ids` of SUMMARY events made for this request, or made by the memory
  layer or a compressor earlier in the same dialogue, or made by the context strategy at an
  earlier call and sent again with this request: a stateful strategy such as
  `llamaindex_summary` keeps its summary and reports it once, when it writes it). It says what
  a summarizer was given, not what it kept;
- `context.evidence_in_summary`: content words of the gold answer (the question's evidence
  content) found in the text of the accepted summaries that are actually in the request sent
  with the question. A summary a later step dropped (COMPOSITE's window, a newer memory
  summary that folded it in) keeps nothing. Defined when the probe has evidence and an answer;
- `context.answer_coverage`: content words of the gold answer found in the context's text.

The gold answer stands for the evidence content, rather than the evidence turns' words: it is
what the question needs (a summary that drops an evidence turn's greeting loses nothing), it
exists for every dataset's probes, and it makes `evidence_in_summary` the part of
`answer_coverage` that summaries carry (never above it). docs/evaluation.md has a worked example.

>>> metric_words("The trip to Lisbon, in May 2023!")
['trip', 'lisbon', 'may', '2023']
"""

from __future__ import annotations

import functools
import math
import numbers
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

import numpy as np

from memlab.metrics.family import metric_family
from memlab.metrics.longterm import EVIDENCE_KEY as RETRIEVED_EVIDENCE
from memlab.metrics.longterm import EXCLUDED_CATEGORIES, retrieval_scores
from memlab.sim.records import CallRecord, LifecycleRecord, ProbeRecord, Record
from memlab.text import content_words as text_content_words
from memlab.trace import SUMMARY, Event
from memlab.vocabulary import METRIC_FUNCTION_WORDS

RETENTION_METRICS = (
    "context.evidence_retention",
    "context.evidence_fed_to_summary",
    "context.evidence_in_summary",
    "context.answer_coverage",
)


# The metrics' own function words (memlab.vocabulary): no rule the metrics judge reads this list.
metric_words = functools.partial(text_content_words, drop=METRIC_FUNCTION_WORDS)


@functools.lru_cache(maxsize=4096)
def _part_words(text: str) -> frozenset[str]:
    """The content words of one message of a request; cached, since a dialogue's probes share most messages."""
    return frozenset(metric_words(text))


@functools.lru_cache(maxsize=16)
def _word_set(parts: tuple[str, ...]) -> frozenset[str]:
    """The content words of a request (its messages' texts); cached, since a dialogue's probes often share one."""
    return frozenset().union(*map(_part_words, parts))


@functools.lru_cache(maxsize=4)
def _sent_text(parts: tuple[str, ...]) -> str:
    """A request's text with whitespace folded, built from its messages' texts when a summary is looked for."""
    return _flat("\n".join(parts))


def _accepted(events: Iterable[Event]) -> Iterator[Event]:
    return (e for e in events if e.kind == SUMMARY and e.data.get("accepted", True))


def summarized_ids(events: Iterable[Event]) -> set[str]:
    """Source ids of every accepted summary among `events` (a rejected summary is not sent)."""
    return {str(i) for e in _accepted(events) for i in e.data.get("source_ids") or ()}


def summary_texts(events: Iterable[Event]) -> list[str]:
    """The text of every accepted summary among `events`, as it was stored or sent."""
    return [str(e.data["text"]) for e in _accepted(events) if e.data.get("text")]


def _flat(text: str) -> str:
    """Whitespace folded to single spaces (a compressor may re-flow a summary into one line)."""
    return " ".join(text.split())


def words_in_sent_summaries(sent: str, summaries: Iterable[str]) -> frozenset[str]:
    """Content words of the `summaries` whose text is in `sent` (the request sent, whitespace folded)."""
    words: set[str] = set()
    for text in dict.fromkeys(summaries):
        flat = _flat(text)
        if flat and flat in sent:
            words.update(metric_words(flat))
    return frozenset(words)


def carried_summaries(events: Iterable[Event]) -> dict[str, Sequence[str]]:
    """The accepted context-layer summaries among a call's `events`: their flattened text -> source ids.

    The ids are not read here (a `SourceIds` lists them when first read): only the summaries a
    probe's request carries need them.
    """
    return {
        _flat(str(e.data["text"])): e.data.get("source_ids", ())
        for e in _accepted(events)
        if e.data.get("layer") == "context" and e.data.get("text")
    }


def probe_retention(
    probe: ProbeRecord,
    persisted_summary_ids: Iterable[str] = (),
    persisted_summaries: Iterable[str] = (),
    earlier_context_summaries: Mapping[str, Sequence[str]] | None = None,
) -> dict[str, float | None]:
    """The four shares for one probe; None where the probe has no evidence or no gold answer.

    `persisted_*` are the ids fed to, and the texts of, the summaries the memory layer and the
    compressors made earlier in the probe's dialogue. `earlier_context_summaries` (flattened text ->
    source ids, from `carried_summaries`) are the context strategy's summaries of earlier calls:
    those whose text this probe's request carries count as if made for it.
    """
    evidence = set(probe.probe.evidence)
    kept = set(probe.kept_ids)
    sent = _sent_text(probe.context_parts) if earlier_context_summaries else ""
    carried = {text: ids for text, ids in (earlier_context_summaries or {}).items() if text and text in sent}
    carried_ids = {str(i) for ids in carried.values() for i in ids or ()}
    folded = (summarized_ids(probe.events) | set(persisted_summary_ids) | carried_ids) - kept
    answer_words = set(metric_words(probe.probe.answer or ""))
    context_words = _word_set(probe.context_parts) if answer_words else frozenset()
    in_summary: float | None = None
    if evidence and answer_words:
        texts = [*summary_texts(probe.events), *persisted_summaries, *carried]
        found = words_in_sent_summaries(_sent_text(probe.context_parts), texts) if texts else frozenset()
        in_summary = len(answer_words & found) / len(answer_words)
    return {
        "context.evidence_retention": len(evidence & kept) / len(evidence) if evidence else None,
        "context.evidence_fed_to_summary": len(evidence & folded) / len(evidence) if evidence else None,
        "context.evidence_in_summary": in_summary,
        "context.answer_coverage": len(answer_words & context_words) / len(answer_words) if answer_words else None,
    }


def probe_rows(records: Sequence[Record]) -> list[dict[str, Any]]:
    """One row per probe: its identity, prompt tokens and retention shares (the questions.csv rows).

    Args:
        records: A run's records (memlab.sim: calls, probes, lifecycle), in replay order.
    """
    persisted: dict[str, set[str]] = {}
    persisted_texts: dict[str, list[str]] = {}
    earlier: dict[str, dict[str, Sequence[str]]] = {}  # dialogue -> its calls' context summaries
    rows = []
    for r in records:
        if isinstance(r, CallRecord):
            earlier.setdefault(r.dialogue_id, {}).update(carried_summaries(r.events))
        elif isinstance(r, LifecycleRecord):
            persisted.setdefault(r.dialogue_id, set()).update(summarized_ids(r.events))
            persisted_texts.setdefault(r.dialogue_id, []).extend(summary_texts(r.events))
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
                    **probe_retention(
                        r,
                        persisted.get(r.dialogue_id, ()),
                        persisted_texts.get(r.dialogue_id, ()),
                        earlier.get(r.dialogue_id),
                    ),
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

    Args:
        rows: One mapping per probe (`probe_rows`).
        names: The columns to average.
        category: The column holding each row's question category.
        excluded: Categories left out of the overall mean (still reported as `<name>.cat_<c>`).
    """
    out: dict[str, float | None] = {}
    # pandas' astype(str) of the column: a missing category (None, NaN) is in no category's mean
    cats = [None if _missing(row.get(category)) else str(row.get(category)) for row in rows]
    skipped = {str(c) for c in excluded}
    groups = sorted({c for c in cats if c is not None})
    for name in names:
        values = [_number(row.get(name)) for row in rows]
        out[name] = _mean([v for v, c in zip(values, cats, strict=True) if c not in skipped])
        for cat in groups:
            out[f"{name}.cat_{cat}"] = _mean([v for v, c in zip(values, cats, strict=True) if c == cat])
    return out


@metric_family
def retention_metrics(
    rows: Sequence[Mapping[str, Any]], excluded: Sequence[str] = EXCLUDED_CATEGORIES
) -> dict[str, float | None]:
    """The retention shares averaged over probes, per question category and overall (minus `excluded`).

    Args:
        rows: One mapping per probe (`probe_rows`).
        excluded: Categories left out of the overall mean.
    """
    return mean_by_category(rows, RETENTION_METRICS, excluded=excluded)


def _missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def _number(value: Any) -> float:
    """`pd.to_numeric(errors="coerce")` of one cell: numbers (and bools) as floats, numeric text parsed, else NaN."""
    if isinstance(value, numbers.Real):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return math.nan
    return math.nan


def _mean(values: Sequence[float]) -> float | None:
    """The mean of the defined values, summed as pandas' `Series.mean` sums them (numpy's pairwise float64 sum)."""
    defined = np.array([v for v in values if not math.isnan(v)], dtype=np.float64)
    return float(defined.sum() / len(defined)) if len(defined) else None
