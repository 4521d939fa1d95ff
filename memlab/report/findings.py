"""What a comparison shows, in sentences computed from its numbers.

The paragraph a reader would otherwise write by hand: which configuration keeps the most
evidence and at what cost, the cheapest one within `NEAR_BEST` of it, which configurations are
dominated, what each swept parameter did (or did not) change for each strategy, and why a cell of
a column the others fill is empty ("—": the metric cannot apply to that configuration).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pandas as pd

from memlab.metrics.registry import V_FINDINGS_WATCHED, comparison_columns, title, view
from memlab.report.fmt import fmt_value, is_missing

TOKENS = "tokens.prompt.mean"
RETENTION = "context.evidence_retention"
RECALL = "longterm.recall@10"
RECALL_AT_1 = "longterm.recall@1"
NEAR_BEST = 0.9  # "within 10% of the best retention"
FRONT = "pareto.evidence_retention"
WATCHED = view(V_FINDINGS_WATCHED)
# Why a metric is undefined for a configuration, by the metric's name prefix (first match wins).
UNDEFINED_BECAUSE = (
    ("latency.context.", "it has no context stage"),
    ("latency.", "that step never ran in it"),
    ("context.", "none of its probe questions has the evidence or gold answer the metric needs"),
    ("summary.", "it made no summary"),
    ("longterm.", "it has no long-term memory"),
    ("answer.", "its answers were not evaluated"),
)


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
    kept = [r for r in ok if _number(r.get(RETENTION)) is not None]
    if kept:
        best = max(kept, key=lambda r: float(r[RETENTION]))
        cheap = min((r for r in kept if float(r[RETENTION]) >= NEAR_BEST * float(best[RETENTION])), key=_tokens)
        sentence = (
            f"{_label(best, params)} keeps the most evidence verbatim ({fmt_value(RETENTION, best[RETENTION])}) "
            f"at {fmt_value(TOKENS, best[TOKENS])} prompt tokens per call"
        )
        if cheap is not best:
            sentence += (
                f"; {_label(cheap, params)} keeps {fmt_value(RETENTION, cheap[RETENTION])} "
                f"(within {100 * (1 - NEAR_BEST):.0f}% of that) at {fmt_value(TOKENS, cheap[TOKENS])}"
            )
        out.append(sentence + ".")
        dominated = [r for r in kept if r.get(FRONT) is False or r.get(FRONT) == 0]
        if FRONT in frame and dominated:
            out.append(
                "Dominated (another configuration sends no more tokens and keeps at least as much evidence): "
                + ", ".join(f"#{r['#']}" for r in dominated)
                + "."
            )
        unmeasured = [r for r in ok if _number(r.get(RETENTION)) is None]
        if FRONT in frame and unmeasured:  # no retention to compare: neither on the front nor dominated
            out.append(
                f"{title(RETENTION)} not measured, so neither on its Pareto front nor dominated (left out of its "
                "figure): " + ", ".join(f"#{r['#']}" for r in unmeasured) + "."
            )
    ignored: dict[str, list[str]] = {}
    for r in ok:
        for key in str(r.get("ignored") or "").split():
            if f"param.{key}" not in params:
                ignored.setdefault(key, []).append(_label(r, params))
    out += [f"{key} does not apply to {', '.join(labels)}: ignored there." for key, labels in ignored.items()]
    for param in params:
        if all(_sort_key(str(r[param]))[0] == 0 for r in ok):  # a numeric knob, not a choice of strategy
            out += _effect(ok, param, [p for p in params if p != param])
    return out + _depth_for_precision(ok, params) + _undefined(ok, params) + _what_to_pick(ok, params)


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


def _what_to_pick(ok: Sequence[Row], params: Sequence[str]) -> list[str]:
    """The closing advice: the configurations worth choosing, cheapest first, each the best for budgets up to the next.

    Read from the Pareto front of prompt tokens against evidence retention, or long-term recall@10 when no
    configuration measures retention; equal points share one entry.
    """
    for quality in (RETENTION, RECALL):
        front = [
            r for r in ok if r.get(f"pareto.{quality.split('.', 1)[1]}") is True and _number(r.get(quality)) is not None
        ]
        if front:
            break
    else:
        return []
    if len({r.get(DATA) for r in ok}) > 1:  # each dataset has its front; one ordering of them all would mix data
        return [
            f"What to pick: these runs replayed different data, so each dataset has its own best {title(quality)} "
            "per token (the Pareto badges); pick within one dataset (`memlab recommend` on a sweep of one)."
        ]
    points: dict[tuple[float, float], list[Row]] = {}
    for r in sorted(front, key=lambda r: (_tokens(r), -float(r[quality]), r["#"])):
        points.setdefault((_tokens(r), float(r[quality])), []).append(r)
    steps = [
        f"{', '.join(_label(r, params) for r in rows)} at {fmt_value(TOKENS, tokens)} tokens: {fmt_value(quality, q)}"
        for (tokens, q), rows in points.items()
    ]
    name = title(quality)
    others = "every other configuration is dominated"
    if any(_number(r.get(quality)) is None for r in ok):
        others = f"every other configuration measuring {name} is dominated"
    if len(steps) == 1:
        return [f"What to pick: {steps[0].split(' at ')[0]}: it sends the fewest tokens and has the best {name}."]
    return [
        f"What to pick, by the prompt tokens per call you can spend (each the best {name} until the next one's "
        f"tokens; {others}): " + "; ".join(steps) + ". For a budget, "
        "`memlab recommend SWEEP_DIR --budget N` names the one that fits it."
    ]


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
