"""The report of one run: `report.md` (tables) and a self-contained `report.html` (tables and figures)."""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

import pandas as pd

from memlab.metrics import DEFAULT_PRICING_MODEL
from memlab.metrics.registry import S_CALLS, by_section
from memlab.report import html, plots
from memlab.report.fmt import fmt_value, is_missing
from memlab.report.health import measurement_warnings
from memlab.report.rundata import RunData
from memlab.tokens import get_counter

RETENTION = (
    "context.evidence_retention",
    "context.evidence_fed_to_summary",
    "context.evidence_in_summary",
    "context.answer_coverage",
)
COST_NOTE = "prompts + the strategies' own model calls, at {model} prices"
HEADLINE = (
    ("calls", "calls", "simulated LLM calls"),
    ("tokens.prompt.mean", "prompt tokens", "mean per call"),
    ("tokens.net_saved_ratio", "tokens saved (net)", "prompts + the strategies' own model calls, vs the full history"),
    ("context.evidence_retention", "evidence kept", "sent verbatim with the question"),
    ("context.evidence_in_summary", "evidence in summaries", "answer words in the summaries sent"),
    ("context.answer_coverage", "answer coverage", "gold answer words in context"),
    ("longterm.recall@10", "recall@10", "evidence in top-10 memories"),
    ("cost.usd", "cost", COST_NOTE),
    ("latency.context.p50_us", "context latency", "median, this machine"),
)
PER_CATEGORY = (
    *RETENTION,
    "longterm.recall@10",
    "longterm.ndcg@10",
    "answer.f1.locomo",
    "answer.f1.mem0",
    "answer.judge",
)
_CATEGORY = re.compile(r"^(?P<metric>.+)\.cat_(?P<cat>.+)$")
WORST_QUESTIONS = 10


def category_table(metrics: dict[str, Any], names: Iterable[str] = PER_CATEGORY) -> pd.DataFrame:
    """Per-category values of `names` (rows: categories, columns: the names some category has)."""
    names = list(names)
    cats: dict[str, dict[str, Any]] = {}
    for key, value in metrics.items():
        match = _CATEGORY.match(key)
        if match and match["metric"] in names:
            cats.setdefault(match["cat"], {})[match["metric"]] = value
    frame = pd.DataFrame.from_dict(cats, orient="index", columns=names).dropna(axis=1, how="all")
    return frame.loc[sorted(frame.index, key=lambda c: (not c.isdigit(), int(c) if c.isdigit() else 0, c))]


def metric_sections(metrics: dict[str, Any]) -> list[tuple[str, pd.DataFrame]]:
    """(title, table of metric/value) per registry section; per-category metrics go to their own table."""
    out = []
    overall = {k: v for k, v in metrics.items() if not _CATEGORY.match(k)}
    for title, names in by_section(overall).items():
        rows = [{"metric": k, "value": fmt_value(k, overall[k])} for k in names]
        if rows and not all(r["value"] == "—" for r in rows):
            out.append((title, pd.DataFrame(rows)))
    return out


def cache_note(metrics: dict[str, Any]) -> str | None:
    """How many of the strategies' model calls a cache answered (`latency.cached_calls`), when they made any."""
    calls, cached = metrics.get("llm.calls"), metrics.get("latency.cached_calls")
    if not isinstance(calls, int | float) or not calls or not isinstance(cached, int | float):
        return None
    return (
        f"{int(cached):,} of {int(calls):,} model calls were answered from a cache (no request sent: "
        "litellm's disk cache, or the offline model's summary memo); latency.cached_calls, kept out of metrics.json"
    )


def _formatted(frame: pd.DataFrame) -> pd.DataFrame:
    return pd.DataFrame({c: [fmt_value(c, v) for v in frame[c]] for c in frame.columns}, index=frame.index)


def worst_questions(run: RunData, n: int = WORST_QUESTIONS) -> pd.DataFrame:
    """The probes whose evidence the context kept least of."""
    q = run.questions
    if q.empty or "context.evidence_retention" not in q or q["context.evidence_retention"].isna().all():
        return pd.DataFrame()
    rows = q.dropna(subset=["context.evidence_retention"]).sort_values(
        ["context.evidence_retention", "context.answer_coverage", "dialogue", "probe"], kind="stable"
    )
    cols = [c for c in ("dialogue", "probe", "category", "question", "evidence", *RETENTION) if c in rows]
    return rows[cols].head(n)


def _subtitle(run: RunData) -> list[str]:
    m = run.manifest
    lines = []
    if m.get("overrides"):
        lines.append("overrides: " + " ".join(f"<code>{html.esc(o)}</code>" for o in m["overrides"]))
    dataset = run.config.get("dataset") or {}
    target = dataset.get("_target_", "") if isinstance(dataset, dict) else ""
    path = dataset.get("path", "") if isinstance(dataset, dict) else ""
    loader = target.rsplit(".", 1)[-1]
    lines.append(html.esc(f"{m.get('dialogues', '?')} dialogues · dataset {loader} {path} · seed {m.get('seed', '?')}"))
    return lines


def pricing_model(run: RunData) -> str:
    """The model whose prices `cost.usd` uses (the run's `pricing.model`)."""
    pricing = run.config.get("pricing") or {}
    return str(pricing.get("model") or DEFAULT_PRICING_MODEL) if isinstance(pricing, dict) else DEFAULT_PRICING_MODEL


def run_report_md(run: RunData) -> str:
    """Markdown: headline, every metric by section, per category, the questions that lost most."""
    out = [f"# memlab run: {run.name}", ""]
    for warning in measurement_warnings(run.metrics):
        out += [f"> **WARNING: this run measured nothing here: {warning}.**", ""]
    if run.manifest.get("overrides"):
        out += ["Overrides: " + " ".join(f"`{o}`" for o in run.manifest["overrides"]), ""]
    out += [f"Run directory: `{run.path}` · figures in `report.html`", ""]
    tokenizer = get_counter(str(run.config["tokenizer"])).name if run.config.get("tokenizer") else "the run's tokenizer"
    out += [
        f"Costs are priced at {pricing_model(run)} (litellm's bundled price table); tokens counted with {tokenizer}.",
        "",
    ]
    metrics = run.all_metrics()
    for title, frame in metric_sections(metrics):
        out += [f"## {title}", "", frame.to_markdown(index=False), ""]
        if title == S_CALLS and (note := cache_note(metrics)):
            out += [note + ".", ""]
    cats = category_table(metrics)
    if not cats.empty:
        out += [
            "## Per question category",
            "",
            _formatted(cats).rename_axis("category").reset_index().to_markdown(index=False),
            "",
        ]
    worst = worst_questions(run)
    if not worst.empty:
        out += ["## Questions whose evidence was lost most", "", _formatted(worst).to_markdown(index=False), ""]
    out.append("Latencies vary per machine and are kept in `latency.json`, apart from the byte-stable `metrics.json`.")
    return "\n".join(out) + "\n"


def run_report_html(run: RunData) -> str:
    """HTML: headline cards, the per-turn prompt curve, retention per category, latency, all metrics."""
    metrics = run.all_metrics()
    body = [
        *(
            f'<div class="banner">WARNING: this run measured nothing here: {html.esc(w)}.</div>'
            for w in measurement_warnings(run.metrics)
        ),
        html.cards(
            (label, fmt_value(name, metrics.get(name)), note.format(model=pricing_model(run)))
            for name, label, note in HEADLINE
            if not is_missing(metrics.get(name))
        ),
    ]
    figures = []
    if not run.calls.empty:
        figures.append(
            html.figure(
                plots.prompt_curves({"sent": run.calls}),
                "Prompt tokens the strategy sends at each turn, against the whole history",
            )
        )
    cats = category_table(metrics)
    if not cats.empty and not cats.isna().all().all():
        values = {name.split(".", 1)[1]: {str(c): v for c, v in cats[name].items()} for name in cats.columns}
        figures.append(
            html.figure(
                plots.grouped_bars(
                    values,
                    title="What the context keeps, per question category",
                    ylabel="% of probes' evidence / answer words",
                ),
                "Retention per question category",
            )
        )
    if not run.latency_samples.empty:
        figures.append(
            html.figure(
                plots.latency_boxes({run.name: run.latency_samples}), "Latency per step on this machine (latency.csv)"
            )
        )
    if figures:
        body.append(f'<h2>Figures</h2><div class="grid2">{"".join(figures)}</div>')
    sections = metric_sections(metrics)
    if sections:
        body.append('<h2>Metrics</h2><div class="grid2">')
        for title, frame in sections:
            note = cache_note(metrics) if title == S_CALLS else None
            extra = f"<p>{html.esc(note)}.</p>" if note else ""
            body.append(f"<div><h3>{html.esc(title)}</h3>{html.table(frame)}{extra}</div>")
        body.append("</div>")
    if not cats.empty:
        body.append(
            "<h2>Per question category</h2>" + html.table(_formatted(cats).rename_axis("category").reset_index())
        )
    worst = worst_questions(run)
    if not worst.empty:
        body.append(
            "<h2>Questions whose evidence was lost most</h2>"
            + html.table(_formatted(worst), text_columns=("question", "evidence"))
        )
    footer = (
        f"memlab · {html.esc(run.manifest.get('git_revision') or 'no git revision')} · data sha256 "
        f"{html.esc(str(run.manifest.get('data_sha256', ''))[:12])} · latencies vary per machine (latency.json)"
    )
    return html.page(f"memlab run: {run.name}", _subtitle(run), "".join(body), footer)
