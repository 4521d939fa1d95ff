"""What one probe's retrieval leaves in the run's records: ranked memory ids, scores, cited turns, stage moves.

Only ids, numbers and turn ids (never texts), so a run's retrievals stay small: one entry per probe
under `RESULT_RETRIEVAL`, which the run writes to ``retrievals.jsonl`` (and a TREC run file from it).
Each stage's moves are the memories whose rank it changed among the first `k` before or after it
(rank before -> after, None where absent: pulled in from beyond the candidates, or dropped), and the
rank of the first memory citing an evidence turn among the first `k` before and after it (None: none
there; what the report calls evidence up or down).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from memlab.longterm.model import Retrieved
from memlab.longterm.rerank import StageTrace
from memlab.longterm.service import Ranking

RESULT_RETRIEVAL = "longterm.retrieval"
SCORE_DIGITS = 6


def _evidence_rank(hits: Sequence[Retrieved], evidence: frozenset[str]) -> int | None:
    """The 0-based rank of the first hit citing an evidence turn (None: none does, or no evidence)."""
    return next((i for i, h in enumerate(hits) if evidence.intersection(h.memory.evidence)), None)


def stage_moves(trace: StageTrace, depth: int) -> list[list[Any]]:
    """``[memory id, rank before, rank after]`` of each memory the stage moved among the first `depth`."""
    before = {h.memory.id: i for i, h in enumerate(trace.before)}
    after = {h.memory.id: i for i, h in enumerate(trace.after)}
    shown = [h.memory.id for h in (*trace.before[:depth], *trace.after[:depth])]
    moved = [mid for mid in dict.fromkeys(shown) if before.get(mid) != after.get(mid)]
    key = [(after.get(m, len(after)), before.get(m, len(before))) for m in moved]
    return [[mid, before.get(mid), after.get(mid)] for _, mid in sorted(zip(key, moved, strict=True))]


def retrieval_entry(ranking: Ranking, evidence: Iterable[str]) -> dict[str, Any]:
    """A probe's retrieval as plain data: ``ranked`` ``[id, score, [turns]]`` best first, ``stages`` moves."""
    wanted = frozenset(e for e in evidence if e)
    depth = len(ranking.hits)
    return {
        "ranked": [[h.memory.id, round(h.score, SCORE_DIGITS), list(h.memory.evidence)] for h in ranking.hits],
        "stages": [
            {
                "stage": t.stage,
                "moved": stage_moves(t, depth),
                "evidence_rank": [_evidence_rank(t.before[:depth], wanted), _evidence_rank(t.after[:depth], wanted)],
            }
            for t in ranking.stages
        ],
    }
