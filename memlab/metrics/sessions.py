"""Session-level retrieval, as LongMemEval scores it: which sessions the retrieved memories come from.

A probe whose metadata names its evidence sessions (``evidence_sessions``: LongMemEval's
``answer_session_ids``) is scored on the ranking of the sessions its retrieved memories cite, in
the order first cited; a turn's session is its id without the last ``_<turn number>``, LongMemEval's
turn ids (``answer_4be1b6b4_2_3`` is turn 3 of ``answer_4be1b6b4_2``; its ``strip_turn_id``).
K counts distinct sessions, as LongMemEval's ``evaluate_retrieval_turn2session`` widens its cut-off
until K sessions are in: ``longterm.session_recall_any@K`` / ``session_recall_all@K`` are 1 if any /
every evidence session is among the first K, ``longterm.session_ndcg_any@10`` its binary nDCG over the
session ranking (the turn-level functions of `memlab.metrics.longterm` applied to sessions).

>>> session_of("answer_4be1b6b4_2_3"), session_of("ultrachat_101_7")
('answer_4be1b6b4_2', 'ultrachat_101')
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from memlab.dialogues.model import EVIDENCE_SESSIONS_KEY
from memlab.metrics.family import metric_family
from memlab.metrics.longterm import (
    EVIDENCE_KEY,
    EXCLUDED_CATEGORIES,
    K_VALUES,
    NDCG_K,
    ndcg_any_at_k,
    recall_all_at_k,
    recall_any_at_k,
)
from memlab.metrics.retention import mean_by_category


def session_of(turn_id: str) -> str:
    """The session of a LongMemEval turn id: the id without its last ``_<turn number>``."""
    return turn_id.rpartition("_")[0] or turn_id


def session_scores(
    sessions: Sequence[str], retrieved: Sequence[Sequence[str]], k_values: Sequence[int] = K_VALUES
) -> dict[str, float]:
    """Every session-level metric of one question, from the turns each retrieved memory cites."""
    ranked = [[session_of(turn) for turn in memory] for memory in retrieved]
    row: dict[str, float] = {}
    for k in k_values:
        row[f"longterm.session_recall_any@{k}"] = recall_any_at_k(sessions, ranked, k)
        row[f"longterm.session_recall_all@{k}"] = recall_all_at_k(sessions, ranked, k)
    row[f"longterm.session_ndcg_any@{NDCG_K}"] = ndcg_any_at_k(sessions, ranked, NDCG_K)
    return row


@metric_family
def session_retrieval_metrics(
    probes: Iterable[Any], excluded: Sequence[str] = EXCLUDED_CATEGORIES
) -> dict[str, float | None]:
    """Session-level recall and nDCG (module docstring), overall (minus `excluded`) and per category.

    Empty without probes that name evidence sessions or without long-term results.
    """
    rows: list[dict[str, Any]] = []
    for record in probes:
        sessions = record.probe.metadata.get(EVIDENCE_SESSIONS_KEY)
        if sessions and EVIDENCE_KEY in record.results:
            rows.append({"category": record.probe.category, **session_scores(sessions, record.results[EVIDENCE_KEY])})
    if not rows:
        return {}
    return mean_by_category(rows, [name for name in rows[0] if name != "category"], excluded=excluded)
