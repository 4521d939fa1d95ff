"""What a comparison shows, in sentences computed from its numbers.

The paragraph a reader would otherwise write by hand: which configuration is best in the quality
that tells the rows apart (evidence retention, or long-term recall@10 when retention is unmeasured or
equal in every row) and at what cost, the cheapest one within `NEAR_BEST` of it, which
configurations are dominated, counts of requests a provider would reject where the rows differ,
what each swept parameter did (or did not) change for each strategy, why a cell of a column the
others fill is empty ("—": the metric cannot apply to that configuration), and what to pick, setting
aside as `memlab recommend` does the configurations that cost more than sending the full history.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import pandas as pd

from memlab.metrics.registry import (
    V_COMPARISON_QUALITY,
    V_FINDINGS_INTEGRITY,
    V_FINDINGS_WATCHED,
    comparison_columns,
    spec,
    title,
    view,
)
from memlab.report.fmt import fmt_value, is_missing
from memlab.report.recommend import NET, wasteful

TOKENS = "tokens.prompt.mean"
RETENTION = "context.evidence_retention"
RECALL = "longterm.recall@10"
RECALL_AT_1 = "longterm.recall@1"
NEAR_BEST = 0.9  # "within 10% of the best retention"
QUALITY = view(V_COMPARISON_QUALITY)  # the Pareto fronts' quality axes, in the order they decide
WATCHED = view(V_FINDINGS_WATCHED)
INTEGRITY = view(V_FINDINGS_INTEGRITY)
# Why a metric is undefined for a configuration, by the metric's name prefix (first match wins).
UNDEFINED_BECAUSE = (
    ("latency.context.", "it has no context stage"),
    ("latency.", "that step never ran in it"),
    ("context.", "none of its probe questions has the evidence or gold answer the metric needs"),
    ("summary.", "it made no summary"),
    # a peer memory (mem0, LangMem, llama-index Memory) remembers without memlab's memory_save/memory_search
    ("longterm.tool.", "it does not call memlab's memory tools"),
    ("longterm.", "it has no long-term memory"),
    ("answer.", "its answers were not evaluated"),
)


def pareto_front(cost: Sequence[float], quality: Sequence[float]) -> list[bool | None]:
    """Which points no other point dominates (cost no higher and quality no lower, one strictly); None for a point
    without cost or quality (not measured: neither on the front nor dominated, an empty cell in comparison.csv).

    Args:
        cost: Each point's cost (lower is better).
        quality: Each point's quality (higher is better).

    >>> pareto_front([10, 20, 30, 15, 5], [0.5, 0.9, 0.8, 0.4, None])
    [True, True, False, False, None]
    """
    points = list(zip(cost, quality, strict=True))
    front: list[bool | None] = []
    for i, (c, q) in enumerate(points):
        if is_missing(c) or is_missing(q):
            front.append(None)
            continue
        dominated = any(
            (c2 <= c and q2 >= q and (c2 < c or q2 > q))
            for j, (c2, q2) in enumerate(points)
            if j != i and not is_missing(c2) and not is_missing(q2)
        )
        front.append(not dominated)
    return front


def front_column(metric: str) -> str:
    """The comparison's column saying which rows are on `metric`'s Pareto front (`pareto.evidence_retention`)."""
    return f"pareto.{metric.split('.', 1)[1]}"


def _number(value: object) -> float | None:
    return None if is_missing(value) or not isinstance(value, int | float) else float(value)


def _sort_key(value: str) -> tuple[int, float, str]:
    try:
        return (0, float(value), "")
    except ValueError:
        return (1, 0.0, value)


Row = dict[str, Any]
DATA = "data"  # the comparison table's column naming each run's data (the first digits of its data_sha256)


def _label(row: Row, params: Sequence[str]) -> str:
    return f"#{row['#']} ({', '.join(str(row[k]) for k in params)})" if params else f"#{row['#']}"


def findings(frame: pd.DataFrame) -> list[str]:
    """Sentences about `frame` (a comparison table); empty when there is nothing to compare."""
    rows: list[Row] = [{"#": i, **{str(k): v for k, v in r.items()}} for i, r in enumerate(frame.to_dict("records"))]
    ok = [r for r in rows if r["status"] == "ok"]
    params = [str(c) for c in frame.columns if str(c).startswith("param.")]
    out: list[str] = []
    if len(ok) < 2 or TOKENS not in frame:
        return out
    quality = _deciding(ok)
    if quality is not None:
        out += _front(frame, ok, params, quality)
    out += _integrity(ok, params)
    ignored: dict[str, list[str]] = {}
    for r in ok:
        for key in str(r.get("ignored") or "").split():
            if f"param.{key}" not in params:
                ignored.setdefault(key, []).append(_label(r, params))
    out += [f"{key} does not apply to {', '.join(labels)}: ignored there." for key, labels in ignored.items()]
    for param in params:
        if all(_sort_key(str(r[param]))[0] == 0 for r in ok):  # a numeric knob, not a choice of strategy
            out += _effect(ok, param, [p for p in params if p != param])
    picks = _what_to_pick(ok, params, quality) if quality is not None else []
    return out + _depth_for_precision(ok, params) + _undefined(ok, params) + picks


def _measured(ok: Sequence[Row], quality: str) -> list[Row]:
    """The rows of `ok` that report `quality` (a cell "—" in the table is neither good nor bad)."""
    return [r for r in ok if _number(r.get(quality)) is not None]


def _deciding(ok: Sequence[Row]) -> str | None:
    """The quality the paragraph ranks by: the first of `QUALITY` whose value differs between rows, else the first
    measured (None: no row measures one). With `context=none` every row keeps all the evidence, so a long-term
    sweep is told apart by recall@10 alone."""
    measured = [q for q in QUALITY if _measured(ok, q)]
    varied = [q for q in measured if len({_number(r[q]) for r in _measured(ok, q)}) > 1]
    return next(iter(varied or measured), None)


def _front(frame: pd.DataFrame, ok: Sequence[Row], params: Sequence[str], quality: str) -> list[str]:
    """The best configuration in `quality`, the cheapest one near it, the dominated and the unmeasured ones."""
    out = []
    kept = _measured(ok, quality)
    for other in QUALITY:  # said only when `quality` does tell the rows apart
        values = {_number(r[other]) for r in _measured(ok, other)}
        if other != quality and len(values) == 1 and len({_number(r[quality]) for r in kept}) > 1:
            out.append(
                f"{title(other)} is {fmt_value(other, values.pop())} in every configuration measuring it, so it "
                f"decides nothing here: {title(quality)} does."
            )
    name = title(quality)
    best = max(kept, key=lambda r: float(r[quality]))
    cheap = min((r for r in kept if float(r[quality]) >= NEAR_BEST * float(best[quality])), key=_tokens)
    retention = quality == RETENTION
    most, has = ("keeps the most evidence verbatim", "keeps") if retention else (f"has the best {name}", "has")
    sentence = (
        f"{_label(best, params)} {most} ({fmt_value(quality, best[quality])}) at {fmt_value(TOKENS, best[TOKENS])} "
        "prompt tokens per call"
    )
    if cheap is not best:
        sentence += (
            f"; {_label(cheap, params)} {has} {fmt_value(quality, cheap[quality])} "
            f"(within {100 * (1 - NEAR_BEST):.0f}% of that) at {fmt_value(TOKENS, cheap[TOKENS])}"
        )
    out.append(sentence + ".")
    column = front_column(quality)
    dominated = [r for r in kept if r.get(column) is False or r.get(column) == 0]
    as_much = "keeps at least as much evidence" if retention else f"has at least as high a {name}"
    if column in frame and dominated:
        out.append(
            f"Dominated (another configuration sends no more tokens and {as_much}): "
            + ", ".join(f"#{r['#']}" for r in dominated)
            + "."
        )
    unmeasured = [r for r in ok if _number(r.get(quality)) is None]
    if column in frame and unmeasured:  # nothing to compare: neither on the front nor dominated
        out.append(
            f"{name} not measured, so neither on its Pareto front nor dominated (left out of its "
            "figure): " + ", ".join(f"#{r['#']}" for r in unmeasured) + "."
        )
    return out


def _integrity(ok: Sequence[Row], params: Sequence[str]) -> list[str]:
    """The configurations whose requests a provider would reject more often, where the counts differ between rows."""
    out = []
    for metric in INTEGRITY:
        counted = _measured(ok, metric)
        least = min((float(r[metric]) for r in counted), default=0.0)
        worse = [r for r in counted if float(r[metric]) > least]
        if worse:
            out.append(
                f"{title(metric)} counts {spec(metric).description}: "
                + ", ".join(f"{_label(r, params)} {fmt_value(metric, r[metric])}" for r in worse)
                + f"; {fmt_value(metric, least)} in every other configuration."
            )
    return out


def _depth_for_precision(ok: Sequence[Row], params: Sequence[str]) -> list[str]:
    """Whether the configuration with the best recall@10 buys it with recall@1 (the issue-24 trade), said once."""
    both = [r for r in ok if _number(r.get(RECALL)) is not None and _number(r.get(RECALL_AT_1)) is not None]
    if len(both) < 2:
        return []
    deep = max(both, key=lambda r: (float(r[RECALL]), float(r[RECALL_AT_1])))
    sharp = max(both, key=lambda r: (float(r[RECALL_AT_1]), float(r[RECALL])))
    if not (float(deep[RECALL_AT_1]) < float(sharp[RECALL_AT_1]) and float(sharp[RECALL]) < float(deep[RECALL])):
        return []
    return [
        f"{_label(deep, params)} buys recall@10 with recall@1: against {_label(sharp, params)} its recall@10 is "
        f"{fmt_value(RECALL, deep[RECALL])} (vs {fmt_value(RECALL, sharp[RECALL])}) but its recall@1 "
        f"{fmt_value(RECALL_AT_1, deep[RECALL_AT_1])} (vs {fmt_value(RECALL_AT_1, sharp[RECALL_AT_1])})."
    ]


def _what_to_pick(ok: Sequence[Row], params: Sequence[str], quality: str) -> list[str]:
    """The closing advice: the configurations worth choosing, cheapest first, each the best for budgets up to the next.

    Read from the Pareto front of prompt tokens against `quality`, as `memlab recommend` would pick at each budget:
    a configuration costing more than sending the full history (`recommend.wasteful`) is set aside, and said so,
    once one that does not measures `quality` at no more tokens; equal points share one entry.
    """
    front = [r for r in _measured(ok, quality) if r.get(front_column(quality)) is True]
    if not front:
        return []
    if len({r.get(DATA) for r in ok}) > 1:  # each dataset has its front; one ordering of them all would mix data
        return [
            f"What to pick: these runs replayed different data, so each dataset has its own best {title(quality)} "
            "per token (the Pareto badges); pick within one dataset (`memlab recommend` on a sweep of one)."
        ]
    measured = _measured(ok, quality)
    cutoff = min((_tokens(r) for r in measured if not wasteful(r)), default=math.inf)
    # Below `cutoff` recommend picks among the rows that fit, all costly; from it, among those that are not: two
    # fronts, one after the other (one front of both let a costly row hide one recommend picks).
    costly = [r for r in measured if wasteful(r) and _tokens(r) < cutoff]
    fair = [r for r in measured if not wasteful(r)]
    pool = costly + fair
    chosen = [r for rows in (costly, fair) for r, on in zip(rows, _front_of(rows, quality), strict=True) if on]
    steps = _entries(chosen, params, quality, _costly_label)
    set_aside = [r for r in front if r not in pool]
    aside = [
        "Set aside as `memlab recommend` does (each costs more than sending the full history, counting its own "
        "model calls): " + "; ".join(_entries(set_aside, params, quality, _label, net=True)) + "."
    ][: len(set_aside)]
    name = title(quality)
    among = f" measuring {name}" if len(measured) < len(ok) else ""
    others = f"every other configuration{among} is dominated" + (" or set aside" if set_aside else "")
    if len(steps) == 1 and not aside:
        return [f"What to pick: {steps[0].split(' at ')[0]}: it sends the fewest tokens and has the best {name}."]
    if len(steps) == 1:
        return [f"What to pick: {steps[0]} {name}, the best of those not costing more than the full history.", *aside]
    return [
        f"What to pick, by the prompt tokens per call you can spend (each the best {name} until the next one's "
        f"tokens; {others}): " + "; ".join(steps) + ". For a budget, "
        "`memlab recommend SWEEP_DIR --budget N` names the one that fits it.",
        *aside,
    ]


def _front_of(rows: Sequence[Row], quality: str) -> list[bool | None]:
    """Which of `rows` are on their own Pareto front of prompt tokens against `quality`."""
    return pareto_front([_tokens(r) for r in rows], [float(r[quality]) for r in rows])


Labeller = Callable[[Row, Sequence[str]], str]


def _entries(
    rows: Sequence[Row], params: Sequence[str], quality: str, label: Labeller, *, net: bool = False
) -> list[str]:
    """`rows` cheapest first, equal points (tokens and `quality`, and net saved with `net`) sharing one entry."""
    points: dict[tuple[float | None, ...], list[Row]] = {}
    for r in sorted(rows, key=lambda r: (_tokens(r), -float(r[quality]), r["#"])):
        points.setdefault((_tokens(r), float(r[quality]), _number(r.get(NET)) if net else None), []).append(r)
    return [
        f"{', '.join(label(r, params) for r in same)} at {fmt_value(TOKENS, tokens)} tokens: {fmt_value(quality, q)}"
        + (f", {title(NET)} {fmt_value(NET, saved)}" if net else "")
        for (tokens, q, saved), same in points.items()
    ]


def _costly_label(row: Row, params: Sequence[str]) -> str:
    """`row`'s label, flagged when it costs more than the full history (kept: nothing cheaper that does not fits)."""
    if not wasteful(row):
        return _label(row, params)
    return f"{_label(row, params)} ({title(NET)} {fmt_value(NET, row.get(NET))}: more than the full history)"


def _undefined(ok: Sequence[Row], params: Sequence[str]) -> list[str]:
    """Why a comparison column that some configurations fill is empty for the others."""
    out = []
    for metric, column in comparison_columns():
        missing = [r for r in ok if metric in r and _number(r[metric]) is None]
        if missing and len(missing) < len(ok):
            why = next((w for prefix, w in UNDEFINED_BECAUSE if metric.startswith(prefix)), "its run did not report it")
            out.append(f"{column} is undefined (—) for {', '.join(_label(r, params) for r in missing)}: {why}.")
    return out


def _tokens(row: Row) -> float:
    return _number(row.get(TOKENS)) or 0.0


def _effect(ok: Sequence[Row], param: str, others: Sequence[str]) -> list[str]:
    """What changing `param` did, within each group of rows equal in every other parameter."""
    name = param.removeprefix("param.")
    groups: dict[tuple[str, ...], list[Row]] = {}
    for r in ok:
        groups.setdefault(tuple(str(r[o]) for o in others), []).append(r)
    out = []
    for key, group in groups.items():
        if len({str(r[param]) for r in group}) < 2:
            continue
        ordered = sorted(group, key=lambda r: _sort_key(str(r[param])))
        low, high = ordered[0], ordered[-1]
        where = f" for {', '.join(key)}" if key else ""
        span = f"{name} from {low[param]} to {high[param]}"
        changes = [
            f"{title(m)} {fmt_value(m, low.get(m))} → {fmt_value(m, high.get(m))}"
            for m in WATCHED
            if _number(low.get(m)) != _number(high.get(m))
        ]
        if changes:
            out.append(f"{span}{where}: " + "; ".join(changes) + ".")
        else:
            ignored = any(name in str(r.get("ignored") or "").split() for r in ordered)
            reason = " (the strategy has no such parameter: ignored)" if ignored else ""
            out.append(f"{span} changed nothing{where}{reason}.")
    return out
