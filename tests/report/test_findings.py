"""The comparison's sentences: a column that some configurations fill says why it is empty for the others."""

from __future__ import annotations

import pandas as pd

from memlab.report.findings import findings

NAN = float("nan")


def row(context: str, tokens: float, retention: float, p50: float) -> dict[str, object]:
    return {
        "label": f"context={context}",
        "param.context": context,
        "status": "ok",
        "tokens.prompt.mean": tokens,
        "context.evidence_retention": retention,
        "latency.context.p50_us": p50,
    }


def test_an_empty_cell_says_why() -> None:
    frame = pd.DataFrame([row("none", 900.0, 1.0, NAN), row("trim", 100.0, 0.2, 5.0), row("peer", 300.0, 0.3, 80.0)])
    said = findings(frame)
    assert "context p50 is undefined (—) for #0 (none): it has no context stage." in said
    assert not [s for s in said if "evidence kept is undefined" in s]  # filled everywhere


def test_a_column_empty_for_every_configuration_is_left_out_not_explained() -> None:
    """tau-bench has no probe questions: no retention anywhere, and the comparison shows no such column."""
    frame = pd.DataFrame([row("none", 900.0, NAN, NAN), row("trim", 100.0, NAN, 5.0)])
    assert not [s for s in findings(frame) if "evidence kept" in s]


def ranked(rerank: str, at1: float, at10: float) -> dict[str, object]:
    return {
        "label": f"rerank={rerank}",
        "param.longterm.rerank": rerank,
        "status": "ok",
        "tokens.prompt.mean": 500.0,
        "longterm.recall@1": at1,
        "longterm.recall@10": at10,
    }


def test_a_configuration_that_buys_recall_at_10_with_recall_at_1_is_named() -> None:
    frame = pd.DataFrame([ranked("[decay,dedup]", 0.32, 0.64), ranked("[decay,updates,dedup]", 0.24, 0.67)])
    trade = [s for s in findings(frame) if "buys recall@10 with recall@1" in s]
    assert len(trade) == 1 and trade[0].startswith("#1 ([decay,updates,dedup]) buys recall@10 with recall@1")
    assert "#0 ([decay,dedup])" in trade[0]


def test_no_trade_is_claimed_when_one_configuration_is_better_at_both() -> None:
    frame = pd.DataFrame([ranked("[decay,dedup]", 0.20, 0.60), ranked("[decay,updates,dedup]", 0.24, 0.67)])
    assert not [s for s in findings(frame) if "buys recall@10" in s]
