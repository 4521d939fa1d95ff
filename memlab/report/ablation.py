"""An ablation table: each variant's long-term retrieval beside the full pipeline's, with paired bootstrap CIs.

Per-question scores come from each run folder's retrievals.jsonl, scored as
`memlab.metrics.longterm_metrics` scores them (the same questions: evidence present, categories in
``eval.overall_excludes`` left out), so each variant's mean is its run's ``longterm.<metric>`` in
metrics.json, and an ablation can be recomputed from the folders it leaves. Differences are variant minus
the full pipeline over the same questions, with the paired percentile interval of
`memlab.metrics.paired_bootstrap` (the same resamples for every variant and metric).
"""

from __future__ import annotations

import io
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from memlab.errors import MemlabError
from memlab.metrics.bootstrap import CONFIDENCE, RESAMPLES, paired_bootstrap
from memlab.metrics.longterm import NDCG_K, retrieval_scores
from memlab.report.rundata import RETRIEVALS_FILE

METRICS = ("recall@1", "recall@5", "recall@10", f"ndcg@{NDCG_K}")
QUESTION_KEYS = ["dialogue", "qid"]


def check_metrics(metrics: Sequence[str]) -> tuple[int, ...]:
    """The recall cut-offs `metrics` names; none, or an unknown name, is a `MemlabError` (called before any run).

    Args:
        metrics: The ablation's metrics (``ablate.metrics``).
    """
    if not metrics:
        raise MemlabError(f"ablate.metrics is empty; expected some of recall@K (K >= 1) and ndcg@{NDCG_K}")
    ks = []
    for name in metrics:
        kind, _, k = name.partition("@")
        if name == f"ndcg@{NDCG_K}":
            continue
        if kind != "recall" or not k.isdigit() or int(k) < 1:
            raise MemlabError(f"ablate.metrics: {name!r}; expected recall@K (K >= 1) or ndcg@{NDCG_K}")
        ks.append(int(k))
    return tuple(sorted(set(ks))) or (1,)


def question_scores(run_dir: Path, metrics: Sequence[str] = METRICS) -> pd.DataFrame:
    """One row per question a run's overall ``longterm.*`` means count, indexed by (dialogue, qid), a column per metric.

    Read from the run folder's retrievals.jsonl (its ``scored`` lines: evidence present, category not
    excluded), scored by `memlab.metrics.longterm.retrieval_scores` over each ranked memory's cited turns.

    Args:
        run_dir: a finished run's folder.
        metrics: ``recall@K`` and ``ndcg@10`` names, without the ``longterm.`` prefix.

    Returns:
        The frame; empty (with the columns) when the run retrieved nothing for a scored question.
    """
    ks = check_metrics(metrics)
    path = run_dir / RETRIEVALS_FILE
    lines = [json.loads(text) for text in path.read_text(encoding="utf-8").splitlines()] if path.is_file() else []
    rows = []
    for line in lines:
        if not line["scored"]:
            continue
        scores = retrieval_scores(line["evidence"], [turns for _, _, turns in line["ranked"]], ks)
        rows.append({"dialogue": line["dialogue"], "qid": line["qid"], **{m: scores[m] for m in metrics}})
    frame = pd.DataFrame(rows, columns=[*QUESTION_KEYS, *metrics])
    return frame.set_index(QUESTION_KEYS)


@dataclass(frozen=True)
class AblationVariant:
    """One row of the table.

    Args:
        name: The variant's name (`full` for the whole pipeline).
        overrides: The overrides that make it.
        scores: Its per-question scores, one column per metric.
    """

    name: str
    overrides: tuple[str, ...]
    scores: pd.DataFrame


def ablation_table(
    baseline: AblationVariant,
    variants: Sequence[AblationVariant],
    metrics: Sequence[str] = METRICS,
    *,
    resamples: int = RESAMPLES,
    confidence: float = CONFIDENCE,
    seed: int = 0,
) -> pd.DataFrame:
    """One row per system (the baseline first): each metric's mean, and for variants the difference and its CI.

    Args:
        baseline: the full pipeline.
        variants: the systems compared with it, over the same questions.
        metrics: the score columns to compare.
        resamples: bootstrap draws.
        confidence: the intervals' coverage.
        seed: the draws' seed (the same draws for every variant).

    Returns:
        Columns ``variant``, ``overrides``, ``questions``, then per metric ``<m>``, ``<m>.diff``,
        ``<m>.low``, ``<m>.high`` (the differences empty on the baseline's row).
    """
    base = baseline.scores[list(metrics)]
    rows = [_row(baseline, base, metrics)]
    for variant in variants:
        scores = variant.scores[list(metrics)]
        if not scores.index.equals(base.index):
            missing = base.index.difference(scores.index).size + scores.index.difference(base.index).size
            raise MemlabError(
                f"ablate: variant {variant.name!r} answered other questions than {baseline.name!r} "
                f"({missing} differ; {len(scores)} vs {len(base)}): an override changed the data"
            )
        row = _row(variant, scores, metrics)
        cis = paired_bootstrap(
            scores.to_numpy(), base.to_numpy(), resamples=resamples, confidence=confidence, seed=seed
        )
        for metric, ci in zip(metrics, cis, strict=True):
            row |= {f"{metric}.diff": ci.mean, f"{metric}.low": ci.low, f"{metric}.high": ci.high}
        rows.append(row)
    columns = ["variant", "overrides", "questions"]
    columns += [f"{m}{part}" for m in metrics for part in ("", ".diff", ".low", ".high")]
    return pd.DataFrame(rows, columns=columns)


def _row(variant: AblationVariant, scores: pd.DataFrame, metrics: Sequence[str]) -> dict[str, object]:
    means = scores.mean()
    return {
        "variant": variant.name,
        "overrides": " ".join(variant.overrides),
        "questions": len(scores),
        **{m: float(means[m]) for m in metrics},
    }


def _signed(x: float) -> str:
    return f"{x:+.3f}"


def ablation_markdown(table: pd.DataFrame, metrics: Sequence[str] = METRICS, confidence: float = CONFIDENCE) -> str:
    """The table as markdown: each metric's value, then the difference to the first row and its CI.

    A difference whose interval leaves out zero is in bold.

    Args:
        table: The rows `ablation_table` made.
        metrics: The metrics shown, in order.
        confidence: The intervals' confidence level (for the header).
    """
    pct = f"{confidence:.0%}"
    header = ["variant", "overrides", "questions"]
    for m in metrics:
        header += [m, f"Δ {m} [{pct} CI]"]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for row in table.to_dict("records"):
        cells = [str(row["variant"]), f"`{row['overrides']}`" if row["overrides"] else "", str(row["questions"])]
        for m in metrics:
            cells.append(f"{row[m]:.3f}")
            diff = row.get(f"{m}.diff")
            if diff is None or pd.isna(diff):
                cells.append("")
                continue
            text = f"{_signed(diff)} [{_signed(row[f'{m}.low'])}, {_signed(row[f'{m}.high'])}]"
            cells.append(f"**{text}**" if row[f"{m}.low"] > 0 or row[f"{m}.high"] < 0 else text)
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def ablation_files(
    table: pd.DataFrame, settings: Mapping[str, object], metrics: Sequence[str] = METRICS
) -> dict[str, str]:
    """ablation.md, ablation.csv and ablation.json (the rows and the settings that made them), by file name.

    Args:
        table: The rows `ablation_table` made.
        settings: The ablation's settings, written beside the rows.
        metrics: The metrics shown, in order.
    """
    confidence = float(settings.get("confidence", CONFIDENCE))  # type: ignore[arg-type]
    buf = io.StringIO()
    table.to_csv(buf, index=False, float_format="%.6f")
    records = json.loads(table.to_json(orient="records", double_precision=15))
    document = {"settings": dict(settings), "rows": records}
    return {
        "ablation.md": ablation_markdown(table, metrics, confidence),
        "ablation.csv": buf.getvalue(),
        "ablation.json": json.dumps(document, indent=2, sort_keys=True) + "\n",
    }
