"""The report of one run: `report.md` (tables) and a self-contained `report.html` (tables and figures)."""

from __future__ import annotations

import math
import re
import textwrap
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from memlab.metrics import DEFAULT_PRICING_MODEL, EXCLUDED_CATEGORIES
from memlab.metrics.registry import (
    S_CALLS,
    S_LONGTERM,
    V_RUN_HEADLINE,
    V_RUN_PER_CATEGORY,
    V_RUN_RETENTION,
    V_RUN_SUMMARY_CARDS,
    by_section,
    title,
    view,
)
from memlab.naming import NOISE
from memlab.report import html
from memlab.report.budget import Budget, run_budget, used_line
from memlab.report.fmt import fmt_value, is_missing
from memlab.report.health import fallback_warnings, measurement_warnings
from memlab.report.rundata import RunData
from memlab.report.table import Table, typed_column
from memlab.tokens import get_counter

RETENTION = view(V_RUN_RETENTION)
COST_NOTE = "prompts, replies and the strategies' own model calls, at {model} prices"
TOKENS = "tokens.prompt.mean"
# The headline cards: the registry's metrics and titles, with what each card's number counts.
HEADLINE = view(V_RUN_HEADLINE)
CARD_NOTES = {  # (a card without a note shows none)
    "calls": "simulated LLM calls",
    "tokens.prompt.mean": "mean per call",
    "tokens.net_saved_ratio": "prompts + the strategies' own model calls, vs the full history",
    "context.evidence_retention": "sent verbatim with the question",
    "context.evidence_in_summary": "answer words in the summaries sent",
    "context.answer_coverage": "gold answer words in context",
    "longterm.recall@1": "evidence in the top memory",
    "longterm.recall@5": "evidence in top-5 memories",
    "longterm.recall@10": "evidence in top-10 memories",
    "longterm.ndcg@10": "evidence ranked high in the top 10",
    "cost.usd": COST_NOTE,
    "latency.context.p50_us": "median, this machine",
}
PER_CATEGORY = view(V_RUN_PER_CATEGORY)
_CATEGORY = re.compile(r"^(?P<metric>.+)\.cat_(?P<cat>.+)$")
WORST_QUESTIONS = 10
SLICE = ("sim.", "dataset.path", "seed")  # overrides that say how much was replayed, not what was configured
# Summary cards are shown only for a run that made a summary.
SUMMARY_CARDS = view(V_RUN_SUMMARY_CARDS)


def category_table(metrics: dict[str, Any], names: Iterable[str] = PER_CATEGORY) -> Table:
    """Per-category values of `names` (column ``category``, then the names some category has a value of)."""
    names = list(names)
    cats: dict[str, dict[str, Any]] = {}
    for key, value in metrics.items():
        match = _CATEGORY.match(key)
        if match and match["metric"] in names:
            cats.setdefault(match["cat"], {})[match["metric"]] = value
    order = sorted(cats, key=lambda c: (not c.isdigit(), int(c) if c.isdigit() else 0, c))
    columns = {name: typed_column([cats[c].get(name) for c in order]) for name in names}
    kept = [name for name, cells in columns.items() if not all(map(is_missing, cells))]
    if not kept:
        return Table(("category",))
    return Table(("category", *kept), tuple(zip(order, *(columns[name] for name in kept), strict=True)))


@dataclass(frozen=True)
class Section:
    """One registry section of a run's metrics: the rows worth reading, and the names folded away (0 or —)."""

    title: str
    table: Table
    zero: tuple[str, ...]
    undefined: tuple[str, ...]

    def folded(self) -> str:
        """One line naming the folded metrics ("" when none)."""
        parts = [
            f"{label} {', '.join(names)}"
            for label, names in (("zero:", self.zero), ("undefined (—):", self.undefined))
            if names
        ]
        return "; ".join(parts)


def metric_sections(metrics: dict[str, Any]) -> list[Section]:
    """Every registry section with a metric to read; per-category metrics go to their own table.

    A metric at zero or undefined (—) for this run is folded into one line under its section (a window
    strategy writes no summaries: its dozen summary metrics say so once, not in a dozen rows).
    """
    out = []
    overall = {k: v for k, v in metrics.items() if not _CATEGORY.match(k)}
    for section, names in by_section(overall).items():
        zero = tuple(k for k in names if not is_missing(overall[k]) and overall[k] == 0)
        undefined = tuple(k for k in names if is_missing(overall[k]))
        shown = [k for k in names if k not in zero and k not in undefined]
        if shown:
            rows = [{"metric": k, "value": fmt_value(k, overall[k])} for k in shown]
            out.append(Section(section, Table.from_records(rows), zero, undefined))
        elif zero:
            out.append(Section(section, Table(("metric", "value")), zero, undefined))
    return out


def human(table: Table) -> Table:
    """`table` with metric columns titled as the registry titles them."""
    return Table(tuple(title(c) for c in table.columns), table.rows)


def run_title(run: RunData) -> str:
    """The run's name and the configuration its overrides chose: "peers: autogen_token_limited_4000".

    A config-group entry (`+experiment/peers=X`) shows as its value, a knob as key=value; what only slices the
    data (`sim.*`, the dataset path) or names the experiment already named is left to the subtitle.
    """
    parts = []
    for text in run.manifest.get("overrides") or []:
        key, _, value = str(text).lstrip("+~").partition("=")
        if key.startswith(NOISE + SLICE) or (key == "experiment" and value == run.name):
            continue
        parts.append(value if "/" in key else f"{key}={value}")
    return f"{run.name}: {', '.join(parts)}" if parts else run.name


def cache_note(metrics: dict[str, Any]) -> str | None:
    """How many of the strategies' model calls a cache answered (`latency.cached_calls`), when they made any."""
    calls, cached = metrics.get("llm.calls"), metrics.get("latency.cached_calls")
    if not isinstance(calls, int | float) or not calls or not isinstance(cached, int | float):
        return None
    return (
        f"{int(cached):,} of {int(calls):,} model calls were answered from a cache (no request sent: "
        "litellm's disk cache, or the offline model's summary memo); latency.cached_calls, kept out of metrics.json"
    )


def excluded_note(run: RunData, metrics: dict[str, Any]) -> str | None:
    """Which question categories the overall long-term means leave out, how many questions, and why (None: none).

    `longterm.questions` and the overall recall and nDCG count the questions outside `eval.overall_excludes`
    (adversarial by default); the per-category table counts every question, so its counts sum to more.
    """
    evaluation = run.config.get("eval")
    excludes = evaluation.get("overall_excludes") if isinstance(evaluation, dict) else None
    excluded = [str(c) for c in (EXCLUDED_CATEGORIES if excludes is None else excludes)]
    counts = {c: metrics.get(f"longterm.questions.cat_{c}") for c in excluded}
    left = {c: int(n) for c, n in counts.items() if isinstance(n, int | float) and n == n and n > 0}
    overall = metrics.get("longterm.questions")
    if not left or not isinstance(overall, int | float):
        return None
    named = ", ".join(f"{n:,} {c}" for c, n in left.items())
    why = (
        ": an adversarial question's gold answer is that the conversation does not say (LoCoMo and mem0 report them "
        "apart)"
        if "adversarial" in left
        else ""
    )
    return (
        f"The overall recall and nDCG means and longterm.questions ({int(overall):,}) leave out the {named} "
        f"question{'s' if sum(left.values()) != 1 else ''} (`eval.overall_excludes`){why}; the per-category table "
        "shows them on their own"
    )


def section_note(run: RunData, metrics: dict[str, Any], title: str) -> str | None:
    """The note under the report's metric section `title`, if it has one: the cache's under model calls
    (`cache_note`), the questions left out under long-term memory (`excluded_note`)."""
    if title == S_CALLS:
        return cache_note(metrics)
    if title == S_LONGTERM:
        return excluded_note(run, metrics)
    return None


STAGE_COLUMNS = (
    "stage",
    "retrievals",
    "top 1 changed",
    "top 10 changed",
    "evidence up",
    "evidence down",
    "evidence to rank 1",
    "evidence off rank 1",
)
STAGES_NOTE = (
    "What each re-ranking stage (`longterm.rerank`) did to the probes' retrievals (retrievals.jsonl): how often it "
    "changed the top memory or the top 10, and, over the questions with evidence that the overall means count, "
    "how often it moved the first memory citing evidence up or down, onto rank 1 or off it."
)


def stage_moves_table(retrievals: Iterable[dict[str, Any]]) -> Table:
    """Per re-ranking stage, in pipeline order: what it changed at the top and whether that helped (module columns)."""
    rows: dict[str, dict[str, Any]] = {}
    for line in retrievals:
        for stage in line.get("stages", ()):
            row = rows.setdefault(stage["stage"], dict.fromkeys(STAGE_COLUMNS, 0) | {"stage": stage["stage"]})
            ranks = [r for _, *pair in stage["moved"] for r in pair if r is not None]
            row["retrievals"] += 1
            row["top 1 changed"] += 0 in ranks
            row["top 10 changed"] += any(r < 10 for r in ranks)
            if not line.get("scored"):
                continue
            before, after = (math.inf if r is None else r for r in stage["evidence_rank"])
            row["evidence up"] += after < before
            row["evidence down"] += after > before
            row["evidence to rank 1"] += after == 0 < before
            row["evidence off rank 1"] += before == 0 < after
    return Table.from_records(rows.values(), STAGE_COLUMNS)


def _formatted(table: Table) -> Table:
    """Each cell as reports show its column's metric (`fmt_value`; a category's name is text, left as it is)."""
    cells = tuple(tuple(fmt_value(c, v) for c, v in zip(table.columns, row, strict=True)) for row in table.rows)
    return Table(table.columns, cells)


WORST_ORDER = ("context.evidence_retention", "context.answer_coverage", "dialogue", "probe")


def measures_retention(run: RunData) -> bool:
    """Whether some probe of the run has an evidence retention (questions.csv)."""
    q = run.questions
    return (
        not q.empty and "context.evidence_retention" in q and not all(map(is_missing, q["context.evidence_retention"]))
    )


NONE_LOST = "No question lost evidence: every probe's evidence was sent verbatim (evidence kept 100%)."


def worst_questions(run: RunData, n: int = WORST_QUESTIONS) -> Table:
    """The probes whose evidence the context kept least of, those that lost some only (sorted as pandas'
    `sort_values`: gaps last); empty when none lost any (`NONE_LOST`)."""
    q = run.questions
    if not measures_retention(run):
        return Table(())
    keys = [q.columns.index(c) for c in WORST_ORDER]
    rows = sorted(
        (
            row
            for row, kept in zip(q.rows, q["context.evidence_retention"], strict=True)
            if not is_missing(kept) and kept < 1
        ),
        key=lambda row: [(True, 0) if is_missing(row[i]) else (False, row[i]) for i in keys],
    )
    cols = [c for c in ("dialogue", "probe", "category", "question", "evidence", *RETENTION) if c in q]
    return Table(q.columns, tuple(rows[:n])).select(cols)


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


def budget_used(run: RunData) -> tuple[Budget, float] | None:
    """The context budget as configured and the share of it the prompts sent use (None without a budget)."""
    configured, tokens = run_budget(run.config), run.metrics.get(TOKENS)
    if configured is None or tokens is None or is_missing(tokens):
        return None
    return configured, float(tokens) / configured.max_tokens


def run_report_md(run: RunData) -> str:
    """Markdown: headline, every metric by section, per category, the questions that lost most.

    Args:
        run: A run read back (`load_run`).
    """
    out = [f"# memlab run: {run_title(run)}", ""]
    for warning in measurement_warnings(run.metrics):
        out += [f"> **WARNING: this run measured nothing here: {warning}.**", ""]
    for warning in fallback_warnings(run.metrics):
        out += [f"> **WARNING: {warning}.**", ""]
    if run.manifest.get("overrides"):
        out += ["Overrides: " + " ".join(f"`{o}`" for o in run.manifest["overrides"]), ""]
    out += [f"Run directory: `{run.path}` · figures in `report.html`", ""]
    tokenizer = get_counter(str(run.config["tokenizer"])).name if run.config.get("tokenizer") else "the run's tokenizer"
    out += [
        f"Costs are priced at {pricing_model(run)} (litellm's bundled price table); tokens counted with {tokenizer}.",
        "",
    ]
    budget = budget_used(run)
    if budget:
        tokens = run.metrics[TOKENS]
        out += [
            f"Context budget: {budget[0]} (`context.max_tokens`, `context.counter`); the mean prompt sent "
            f"({fmt_value(TOKENS, tokens)} tokens) {used_line(tokens, budget[0].max_tokens)}.",
            "",
        ]
    metrics = run.all_metrics()
    for section in metric_sections(metrics):
        out += [f"## {section.title}", ""]
        if not section.table.empty:
            out += [section.table.to_markdown(), ""]
        if section.folded():
            out += [
                textwrap.fill(f"Zero or undefined in this run: {section.folded()}.", 110, break_on_hyphens=False),
                "",
            ]
        if note := section_note(run, metrics, section.title):
            out += [textwrap.fill(note + ".", 110, break_on_hyphens=False), ""]
    cats = category_table(metrics)
    if not cats.empty:
        out += [
            "## Per question category",
            "",
            human(_formatted(cats)).to_markdown(),
            "",
        ]
    stages = stage_moves_table(run.retrievals)
    if not stages.empty:
        out += ["## Re-ranking stages", "", textwrap.fill(STAGES_NOTE, 110), "", stages.to_markdown(), ""]
    worst = worst_questions(run)
    if not worst.empty:
        out += ["## Questions whose evidence was lost most", "", human(_formatted(worst)).to_markdown(), ""]
    elif measures_retention(run):
        out += ["## Questions whose evidence was lost most", "", NONE_LOST, ""]
    out.append("Latencies vary per machine and are kept in `latency.json`, apart from the byte-stable `metrics.json`.")
    return "\n".join(out) + "\n"


NO_PLOTS_NOTE = "Figures not drawn (report.plots=false); memlab run ... report.plots=true draws them."


def run_report_html(run: RunData) -> str:
    """HTML: headline cards, the per-turn prompt curve, retention per category, latency, all metrics.

    Args:
        run: A run read back (`load_run`).
    """
    metrics, budget = run.all_metrics(), budget_used(run)
    tokens_note = f"; {budget[1]:.0%} of the {budget[0]} budget" if budget else ""
    body = [
        *(
            f'<div class="banner">WARNING: this run measured nothing here: {html.prose(w)}.</div>'
            for w in measurement_warnings(run.metrics)
        ),
        *(f'<div class="banner warn">WARNING: {html.prose(w)}.</div>' for w in fallback_warnings(run.metrics)),
        html.cards(
            (
                title(name),
                fmt_value(name, metrics.get(name)),
                CARD_NOTES.get(name, "").format(model=pricing_model(run)) + (tokens_note if name == TOKENS else ""),
            )
            for name in HEADLINE
            if not is_missing(metrics.get(name)) and (name not in SUMMARY_CARDS or metrics.get("summary.count"))
        ),
    ]
    figures: list[str] = []
    if plots_wanted(run):
        figures = _figures(run, metrics)
    elif not (run.calls.empty and run.latency_samples.empty):
        body.append(f'<p class="muted">{html.esc(NO_PLOTS_NOTE)}</p>')
    if figures:
        body.append(f'<h2>Figures</h2><div class="grid2">{"".join(figures)}</div>')
    cats = category_table(metrics)
    sections = metric_sections(metrics)
    if sections:
        body.append('<h2>Metrics</h2><div class="grid2">')
        for s in sections:
            note = section_note(run, metrics, s.title)
            body.append(
                f"<div><h3>{html.esc(s.title)}</h3>{html.table(s.table) if not s.table.empty else ''}"
                + (f'<p class="muted">Zero or undefined in this run: {html.esc(s.folded())}.</p>' if s.folded() else "")
                + (f"<p>{html.prose(note)}.</p>" if note else "")
                + "</div>"
            )
        body.append("</div>")
    if not cats.empty:
        body.append("<h2>Per question category</h2>" + html.table(human(_formatted(cats))))
    stages = stage_moves_table(run.retrievals)
    if not stages.empty:
        body.append(f"<h2>Re-ranking stages</h2><p>{html.prose(STAGES_NOTE)}</p>" + html.table(stages))
    worst = worst_questions(run)
    if not worst.empty:
        body.append(
            "<h2>Questions whose evidence was lost most</h2>"
            + html.table(human(_formatted(worst)), text_columns=("question", "evidence"))
        )
    elif measures_retention(run):
        body.append(f"<h2>Questions whose evidence was lost most</h2><p>{html.esc(NONE_LOST)}</p>")
    footer = (
        f"memlab · {html.esc(run.manifest.get('git_revision') or 'no git revision')}"
        f"{' (modified checkout)' if run.manifest.get('dirty') else ''} · data sha256 "
        f"{html.esc(str(run.manifest.get('data_sha256', ''))[:12])} · latencies vary per machine (latency.json)"
    )
    return html.page(f"memlab run: {run_title(run)}", _subtitle(run), "".join(body), footer)


def plots_wanted(run: RunData) -> bool:
    """Whether the run's config asks for figures (`report.plots`; runs written before the key: yes).

    Args:
        run: A run read back (`load_run`).
    """
    return bool((run.config.get("report") or {}).get("plots", True))


# (title, y label) of the per-category bars; with long-term metrics they are also recall (a share of evidence turns)
# and nDCG (a score, x 100), which "% of probes' evidence / answer words" does not describe
RETENTION_BARS = ("What the context keeps, per question category", "% of probes' evidence / answer words")
RETRIEVAL_BARS = ("Retention and long-term retrieval, per question category", "share or score (%)")
RETRIEVAL_CAPTION = (
    "Per question category: what the context keeps (evidence, answer words) and what long-term retrieval finds "
    "(recall@K: evidence in the top K memories; nDCG@10: evidence ranked high), in %"
)


def _figures(run: RunData, metrics: dict[str, Any]) -> list[str]:
    """The report's figures: the per-turn prompt curve, retention per category, latency per step."""
    from memlab.report import plots  # matplotlib: imported only when a report draws

    figures = []
    if not run.calls.empty:
        figures.append(
            html.figure(
                plots.prompt_curves({"sent": run.calls.frame()}),
                "Prompt tokens the strategy sends at each turn, against the whole history",
            )
        )
    cats = category_table(metrics)
    if not cats.empty:
        values = {
            name.split(".", 1)[1]: dict(zip(cats["category"], cats[name], strict=True)) for name in cats.columns[1:]
        }
        retrieval = any(name.startswith("longterm.") for name in cats.columns[1:])
        bars = RETRIEVAL_BARS if retrieval else RETENTION_BARS
        figures.append(
            html.figure(
                plots.grouped_bars(values, title=bars[0], ylabel=bars[1]),
                RETRIEVAL_CAPTION if retrieval else "Retention per question category",
            )
        )
    if not run.latency_samples.empty:
        figures.append(
            html.figure(
                plots.latency_boxes({run.name: run.latency_samples.frame()}),
                f"Latency per step on this machine (latency.csv); {plots.LATENCY_NOTE}",
            )
        )
    return figures
