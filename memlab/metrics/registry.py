"""The metric registry: the one place that says what each metric is.

Every metric a run writes (`metrics.json`, `latency.json`) is declared here once, as a `Metric`:
its name (exact, or a glob such as ``longterm.recall@*``), unit, which direction is better, how
it reads in a report, a one-line description and the report section it belongs to. Reports,
comparison columns, `memlab compare`'s directions and tolerances, the run manifest and the
metric table of docs/evaluation.md all derive from `METRICS`; a test fails for any metric a
real run computes that is not registered here.

Adding a metric is one line in `METRICS`::

    Metric("tokens.net_saved_ratio", RATIO, HIGHER, S_TOKENS, "1 - (prompt + aux tokens) / full-history tokens"),

and nothing else here: the function that computes it is marked `@metric_family` where it is defined
(`memlab.metrics.family`), and `python -m memlab.metrics --write docs/evaluation.md` rewrites the table.

Per-category variants (``<name>.cat_<category>``) need no entry: `lookup` strips the suffix.
Exact names are found before patterns; among patterns the first declared that matches wins,
so declare a specific pattern before a broader one.

The API: `lookup(name)` (the `Metric`, or None), `spec(name)` (or KeyError), `direction(name)`,
`unregistered(names)`, `describe(names)` (unit, direction, format, description: what the manifest
holds under ``metric_definitions``), `by_section(metrics)` (report sections), `comparison_columns()`
and `markdown_table()` (the table in docs/evaluation.md). `ABS_TOL`/`REL_TOL` are the gate's default
tolerance; a `Metric` may set its own.

>>> lookup("longterm.recall@10.cat_temporal").unit
'share'
>>> spec("cost.usd").fmt, direction("tokens.prompt.mean")
('usd', 'lower')
"""

from __future__ import annotations

import fnmatch
import functools
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

Better = Literal["higher", "lower", "none"]
HIGHER: Better = "higher"
LOWER: Better = "lower"
NONE: Better = "none"

# Units, each with its display format.
SHARE = "share"  # a fraction in [0, 1], shown as a percentage
TOKENS = "tokens"
COUNT = "count"
USD = "usd"
MICROSECONDS = "us"
RATIO = "ratio"  # a ratio of two quantities, shown as a percentage (may exceed 100%)
SCORE = "score"  # a score in [0, 1] (F1, BLEU, judge), shown as a percentage
UNITS = (SHARE, TOKENS, COUNT, USD, MICROSECONDS, RATIO, SCORE)
FORMATS = {SHARE: "percent", RATIO: "percent", SCORE: "percent", USD: "usd", MICROSECONDS: "us"}

# Report sections, in the order reports show them.
S_TOKENS = "Tokens and cost"
S_CONTEXT = "What the context keeps"
S_LONGTERM = "Long-term memory"
S_SUMMARIES = "Summaries"
S_CALLS = "Model calls and memory"
S_ANSWERS = "Answers"
S_LATENCY = "Latency (this machine)"
SECTIONS = (S_TOKENS, S_CONTEXT, S_LONGTERM, S_SUMMARIES, S_CALLS, S_ANSWERS, S_LATENCY)

# The gate's default tolerance, as numpy.isclose: |candidate - baseline| <= ABS_TOL + REL_TOL * |baseline|.
# Files keep 6 decimals, so 1e-6 is rounding noise (5x margin); REL_TOL only absorbs another platform's
# float summation order (~1e-13), so one token or one count more fails at any size up to 10^9 (at 1e-4,
# +500 tokens on a 5M-token total and +1 token per call on a 16k-token prompt passed), and a 1% move
# fails for any value of at least 5.1e-4 (smaller values: a 1% move is under the files’ resolution).
ABS_TOL = 5e-6
REL_TOL = 1e-10
_CATEGORY = re.compile(r"\.cat_[^.]+$")


@dataclass(frozen=True)
class Metric:
    """One metric (or a family, if `name` is a glob): what it measures and how to read it.

    `short` is the column title in comparison tables (empty: not a comparison column);
    `abs_tol`/`rel_tol` override the gate's default tolerance, for metrics that are noisy by nature.
    """

    name: str
    unit: str
    better: Better
    section: str
    description: str
    short: str = ""
    abs_tol: float = ABS_TOL
    rel_tol: float = REL_TOL

    def __post_init__(self) -> None:
        if self.unit not in UNITS:
            raise ValueError(f"metric {self.name!r}: unit {self.unit!r} not one of {UNITS}")
        if self.section not in SECTIONS:
            raise ValueError(f"metric {self.name!r}: section {self.section!r} not one of {SECTIONS}")

    @property
    def fmt(self) -> str:
        """How the value reads: percent, usd, us, or number."""
        return FORMATS.get(self.unit, "number")

    @property
    def is_pattern(self) -> bool:
        return any(c in self.name for c in "*?[")


_ANSWERS = "with eval.answers=true"
# What the summarizers were asked and gave (metrics/summaries.py), each as `summary.<stat>` over every
# layer and `summary.<layer>.<stat>` per layer (context, memory, compressor): (stat, unit, better, what, short).
_SUMMARY_STATS = (
    ("count", COUNT, NONE, "summaries asked of a model (SUMMARY events)", "summaries"),
    ("accepted", COUNT, NONE, "summaries used: non-empty and not longer (in tokens) than their source", ""),
    ("ratio.mean", RATIO, LOWER, "mean summary tokens / source tokens", ""),
    ("ratio.max", RATIO, LOWER, "largest summary tokens / source tokens", ""),
    ("violations", COUNT, LOWER, "summaries longer than their source", ""),
    ("empty", COUNT, LOWER, "empty summaries", ""),
    ("failed", COUNT, LOWER, "summary calls that raised", ""),
    ("fallbacks", COUNT, LOWER, "summaries not used: the caller took its documented fallback", ""),
)
# fmt: off
METRICS: tuple[Metric, ...] = (
    # --- tokens and cost
    Metric("calls", COUNT, NONE, S_TOKENS, "simulated LLM calls (one per assistant turn by default)", "calls"),
    Metric("tokens.prompt.mean", TOKENS, LOWER, S_TOKENS, "mean tokens of a request the strategies would send", "prompt tokens"),
    Metric("tokens.prompt.p95", TOKENS, LOWER, S_TOKENS, "95th percentile of prompt tokens (linear interpolation)", "prompt p95"),
    Metric("tokens.prompt.max", TOKENS, LOWER, S_TOKENS, "largest prompt of the run"),
    Metric("tokens.prompt.total", TOKENS, LOWER, S_TOKENS, "prompt tokens summed over all calls"),
    Metric("tokens.completion.total", TOKENS, NONE, S_TOKENS, "tokens the calls produced: the replies and the tool rounds' tool-call messages"),
    Metric("tokens.full_history.total", TOKENS, NONE, S_TOKENS, "tokens sending the whole history at every call would have sent"),
    Metric("tokens.saved_ratio", SHARE, HIGHER, S_TOKENS, "prompt only: 1 - sent / full-history tokens over all calls", "prompt saved"),
    Metric("tokens.net_saved_ratio", RATIO, HIGHER, S_TOKENS, "1 - (prompt + aux tokens) / full-history tokens; negative when the strategy spent more", "net saved"),
    Metric("tokens.aux.prompt", TOKENS, LOWER, S_TOKENS, "prompt tokens of the strategies' own model calls"),
    Metric("tokens.aux.completion", TOKENS, LOWER, S_TOKENS, "completion tokens of the strategies' own model calls"),
    Metric("tokens.aux.total", TOKENS, LOWER, S_TOKENS, "tokens of the strategies' own model calls (summaries, extraction)"),
    Metric("budget.violations", COUNT, LOWER, S_TOKENS, "calls whose prompt exceeds the context window", "over window"),
    Metric("tokens.tools.per_call", TOKENS, LOWER, S_TOKENS, "tokens the offered tool schemas add to each request (in tokens.prompt.*)"),
    Metric("tokens.tools.total", TOKENS, LOWER, S_TOKENS, "tool-schema tokens summed over all calls"),
    Metric("cost.usd", USD, LOWER, S_TOKENS, "cost.prompt_usd + cost.completion_usd + cost.aux_usd: every call as a provider bills it", "cost"),
    Metric("cost.prompt_usd", USD, LOWER, S_TOKENS, "the calls' prompts at pricing.model (a call the provider answered: its billed usage)"),
    Metric("cost.completion_usd", USD, LOWER, S_TOKENS, "what the calls produced, at pricing.model's output price (or as billed)"),
    Metric("cost.aux_usd", USD, LOWER, S_TOKENS, "the strategies' own model calls, prompt and completion, each at its model's prices"),
    Metric("cost.full_history_usd", USD, NONE, S_TOKENS, "sending the whole history at every call, priced at pricing.model, with the same completions"),
    # --- what the context keeps
    Metric("context.tool_orphans", COUNT, LOWER, S_CONTEXT, "requests holding a tool result without its call or a call without all its results (a provider rejects them)", "tool orphans"),
    Metric("context.evidence_retention", SHARE, HIGHER, S_CONTEXT, "share of a probe's evidence ids sent verbatim", "evidence kept"),
    Metric("context.evidence_fed_to_summary", SHARE, NONE, S_CONTEXT, "share of a probe's evidence ids (not sent verbatim) fed to an accepted summary", "evidence fed to summaries"),
    Metric("context.evidence_in_summary", SHARE, HIGHER, S_CONTEXT, "share of the gold answer's content words in the accepted summaries sent with the question", "evidence in summaries"),
    Metric("context.answer_coverage", SHARE, HIGHER, S_CONTEXT, "share of the gold answer's content words in the request", "answer coverage"),
    # --- long-term memory
    Metric("longterm.questions", COUNT, NONE, S_LONGTERM, "questions with evidence that retrieval was measured on"),
    Metric("longterm.recall@10.auto_extract", SHARE, HIGHER, S_LONGTERM, "recall@10 of the memories auto-extraction saved, alone"),
    Metric("longterm.recall@10.agent_tool", SHARE, HIGHER, S_LONGTERM, "recall@10 of the memories the agent saved with memory_save, alone"),
    # recall@1 and @5 have their own columns: depth bought with precision at the top shows beside recall@10.
    Metric("longterm.recall@1", SHARE, HIGHER, S_LONGTERM, "share of the evidence turns cited by the top memory (fractional)", "recall@1"),
    Metric("longterm.recall@5", SHARE, HIGHER, S_LONGTERM, "share of the evidence turns cited by the top 5 memories (fractional)", "recall@5"),
    Metric("longterm.recall@*", SHARE, HIGHER, S_LONGTERM, "share of the evidence turns cited by the top K memories (fractional)", "recall@10"),
    Metric("longterm.precision@1", SHARE, HIGHER, S_LONGTERM, "share of questions whose rank-1 memory cites an evidence turn (ranx's precision@1 over memories)", "P@1"),
    Metric("longterm.mrr", SHARE, HIGHER, S_LONGTERM, "mean 1 / rank of the first memory citing an evidence turn, 0 when none is retrieved (ranx's mrr)", "MRR"),
    Metric("longterm.recall_any@*", SHARE, HIGHER, S_LONGTERM, "1 if any evidence turn is among the first K turns the memories cite (LongMemEval)"),
    Metric("longterm.recall_all@*", SHARE, HIGHER, S_LONGTERM, "1 if every evidence turn is among the first K turns the memories cite (LongMemEval)"),
    Metric("longterm.ndcg_any@*", SHARE, HIGHER, S_LONGTERM, "binary nDCG@K over the cited turns, LongMemEval's ideal and discount"),
    Metric("longterm.ndcg@*", SHARE, HIGHER, S_LONGTERM, "nDCG@K over memories, gain = evidence turns first cited (ranx's ndcg@K)", "nDCG@10"),
    Metric("longterm.newer_first.probes", COUNT, NONE, S_LONGTERM, "updated-fact probes (a superseded list) where the newer or a superseded statement is among the probe_k (20) retrieved memories"),
    Metric("longterm.newer_first", SHARE, HIGHER, S_LONGTERM, "share of newer_first.probes (the denominator) where the first memory citing the newer statement ranks above every memory citing a superseded one; probes with neither retrieved are left out; above, not first: rank 1 is newer@1"),
    Metric("longterm.update_probes", COUNT, NONE, S_LONGTERM, "updated-fact probes (a superseded list) with long-term results: the denominator of newer@1, older@1, newer_missed@10"),
    Metric("longterm.newer@1", SHARE, HIGHER, S_LONGTERM, "share of ALL updated-fact probes whose rank-1 memory cites the newer statement"),
    Metric("longterm.older@1", SHARE, LOWER, S_LONGTERM, "share of ALL updated-fact probes whose rank-1 memory cites a superseded statement"),
    Metric("longterm.newer_missed@10", SHARE, LOWER, S_LONGTERM, "share of ALL updated-fact probes where no memory of the top 10 cites the newer statement"),
    Metric("longterm.decoy_probes", COUNT, NONE, S_LONGTERM, "probes with decoys (later turns that sound like a revision and revise nothing) and long-term results"),
    Metric("longterm.decoy_above", SHARE, LOWER, S_LONGTERM, "share of decoy probes where a memory citing a decoy ranks above every memory citing the evidence"),
    Metric("longterm.decoy_answer@1", SHARE, HIGHER, S_LONGTERM, "share of decoy probes whose rank-1 memory cites the evidence"),
    Metric("longterm.session_recall_any@*", SHARE, HIGHER, S_LONGTERM, "1 if any evidence session is among the first K sessions the memories cite (LongMemEval)"),
    Metric("longterm.session_recall_all@*", SHARE, HIGHER, S_LONGTERM, "1 if every evidence session is among the first K sessions the memories cite (LongMemEval)"),
    Metric("longterm.session_ndcg_any@*", SHARE, HIGHER, S_LONGTERM, "binary nDCG@K over the cited sessions, LongMemEval's ideal and discount"),
    Metric("longterm.injected_tokens.mean", TOKENS, LOWER, S_LONGTERM, "tokens of the injected <long_term_memory> block per probe, over every probe retrieved for (with evidence or not)"),
    Metric("longterm.memories", COUNT, NONE, S_LONGTERM, "memories saved by extraction"),
    Metric("longterm.duplicates", COUNT, LOWER, S_LONGTERM, "saved memories that repeat a stored one"),
    Metric("longterm.skipped", COUNT, NONE, S_LONGTERM, "turns extraction skipped before any model call"),
    Metric("longterm.archived.max_items", COUNT, NONE, S_LONGTERM, "memories archived by the per-user cap (max_items)"),
    Metric("longterm.retrievals", COUNT, NONE, S_LONGTERM, "auto-load retrievals during the conversation (longterm.retrieve)"),
    Metric("longterm.injected_tokens.per_call", TOKENS, LOWER, S_LONGTERM, "tokens of the injected block per call (0 without one)"),
    Metric("longterm.tool.saves", COUNT, NONE, S_LONGTERM, "memory_save calls that stored a new memory", "tool saves"),
    Metric("longterm.tool.searches", COUNT, NONE, S_LONGTERM, "memory_search calls answered"),
    Metric("longterm.tool.dedup_rejected", COUNT, NONE, S_LONGTERM, "memory_save calls refused as a repeat of a stored memory"),
    Metric("longterm.tool.errors", COUNT, LOWER, S_LONGTERM, "memory tool calls refused (bad or forged arguments, tools off)"),
    Metric("longterm.extract.failures", COUNT, LOWER, S_LONGTERM, "extractions that failed (in the reply path or a background worker)"),
    # --- summaries
    *(Metric(f"summary.{stat}", unit, better, S_SUMMARIES, f"{what}, every layer", short) for stat, unit, better, what, short in _SUMMARY_STATS),
    *(Metric(f"summary.*.{stat}", unit, better, S_SUMMARIES, f"{what}, on one layer") for stat, unit, better, what, _ in _SUMMARY_STATS),
    # --- model calls and memory
    Metric("llm.calls", COUNT, NONE, S_CALLS, "model calls made by strategies (LLM_CALL events)", "LLM calls"),
    Metric("llm.failures", COUNT, LOWER, S_CALLS, "model calls that failed"),
    Metric("llm.retries", COUNT, LOWER, S_CALLS, "requests the strategies' model calls sent beyond their first (memlab's retries after a timeout, 429 or 5xx): the provider's state, not the configuration's", abs_tol=float("inf")),
    Metric("llm.fallbacks", COUNT, LOWER, S_CALLS, "fallbacks taken after a failed or rejected model output", "fallbacks"),
    Metric("llm.truncated", COUNT, LOWER, S_CALLS, "model calls (of llm.calls) whose reply was cut off at its token budget"),
    Metric("memory.cleanup.count", COUNT, NONE, S_CALLS, "runs of the Memory layer's cleanup service"),
    Metric("memory.cleanup.items.before", COUNT, NONE, S_CALLS, "stored messages before every cleanup, summed"),
    Metric("memory.cleanup.items.after", COUNT, NONE, S_CALLS, "stored messages after every cleanup, summed"),
    Metric("memory.compress.count", COUNT, NONE, S_CALLS, "AgentMemory compressions that changed the memory"),
    Metric("memory.compress.items.before", COUNT, NONE, S_CALLS, "items before every compression, summed"),
    Metric("memory.compress.items.after", COUNT, NONE, S_CALLS, "items after every compression, summed"),
    Metric("memory.compress.summary_tokens.mean", TOKENS, NONE, S_CALLS, "tokens of the summary each compression left"),
    Metric("memory.archived", COUNT, NONE, S_CALLS, "items archived (kept, no longer served)"),
    Metric("session.forks", COUNT, NONE, S_CALLS, "histories forked at session ends (hooks.sessions.fork)"),
    Metric("session.fork_entries", COUNT, NONE, S_CALLS, "entries the forked branches hold, summed"),
    Metric("tool.calls", COUNT, NONE, S_CALLS, "tool calls the model (or the tool policy) made"),
    Metric("tool.unknown", COUNT, LOWER, S_CALLS, "tool calls naming a tool no component offers (a misnamed tool), answered with an error"),
    # --- answers (eval.answers=true)
    Metric("answer.questions", COUNT, NONE, S_ANSWERS, f"questions answered: those with a gold answer, and adversarial ones ({_ANSWERS})"),
    Metric("answer.failures", COUNT, LOWER, S_ANSWERS, f"answer or judge calls that failed ({_ANSWERS})"),
    Metric("answer.judge.failures", COUNT, LOWER, S_ANSWERS, f"judge calls that failed, of answer.failures ({_ANSWERS})"),
    Metric("answer.judge.unparsed", COUNT, LOWER, S_ANSWERS, f"judge replies that said neither CORRECT nor WRONG: no verdict, so not in answer.judge's denominator ({_ANSWERS})"),
    Metric("answer.calls", COUNT, NONE, S_ANSWERS, f"model calls that answered and judged the questions, not in llm.calls ({_ANSWERS})"),
    Metric("answer.retries", COUNT, LOWER, S_ANSWERS, f"requests the answer and judge calls sent beyond their first, not in llm.retries: the provider's state, not the configuration's ({_ANSWERS})", abs_tol=float("inf")),
    Metric("answer.empty", COUNT, LOWER, S_ANSWERS, f"answers the model gave with no text, scored and judged as empty and in questions.jsonl as empty hypotheses (llm=extractive's empty answer is its abstention, not counted) ({_ANSWERS})"),
    Metric("answer.tokens.prompt", TOKENS, LOWER, S_ANSWERS, f"prompt tokens of the answer and judge calls, not in tokens.aux.* ({_ANSWERS})"),
    Metric("answer.tokens.completion", TOKENS, LOWER, S_ANSWERS, f"completion tokens of the answer and judge calls ({_ANSWERS})"),
    Metric("answer.tokens.total", TOKENS, LOWER, S_ANSWERS, f"tokens of the answer and judge calls ({_ANSWERS})"),
    Metric("answer.cost_usd", USD, LOWER, S_ANSWERS, f"the answer and judge calls, each at its model's prices; not in cost.usd ({_ANSWERS})"),
    Metric("answer.f1.locomo", SCORE, HIGHER, S_ANSWERS, f"LoCoMo evaluation.py: stemmed F1 with per-category rules, adversarial by abstention ({_ANSWERS})", "F1 (LoCoMo)"),
    Metric("answer.f1.mem0", SCORE, HIGHER, S_ANSWERS, f"mem0 evaluation token-set F1, adversarial skipped ({_ANSWERS})"),
    Metric("answer.bleu1.mem0", SCORE, HIGHER, S_ANSWERS, f"mem0 evaluation BLEU-1, adversarial skipped ({_ANSWERS})"),
    Metric("answer.judge", SCORE, HIGHER, S_ANSWERS, f"share of CORRECT among the judge's verdicts on answers with a gold answer (failed and unparsed judgings have none) ({_ANSWERS})", abs_tol=0.01),
    # --- latency (latency.json; compared as ratios to latency.reference_us, gated only when asked)
    Metric("latency.reference_us", MICROSECONDS, NONE, S_LATENCY, "median time of a fixed workload timed throughout the replay"),
    # Depends on the process (workers, earlier runs of a sweep), so never gated: infinite tolerance.
    Metric("latency.cached_calls", COUNT, NONE, S_LATENCY, "model calls answered from a cache", abs_tol=float("inf")),
    Metric("latency.*_us", MICROSECONDS, LOWER, S_LATENCY, "latency percentile of a step, this machine", "context p50"),
)
# fmt: on
# The comparison table's column for a pattern that has one (its representative member).
COLUMN_NAMES = {
    "longterm.recall@*": "longterm.recall@10",
    "longterm.ndcg@*": "longterm.ndcg@10",
    "latency.*_us": "latency.context.p50_us",
}


# Which metrics lead each view of a report, in the order the view reads them (every name registered above):
# the report modules read these and title them with `Metric.short`; a test fails when one names another.
V_RUN_HEADLINE = "run.headline"  # report.html's cards
V_RUN_RETENTION = "run.retention"  # the worst-questions table's columns
V_RUN_PER_CATEGORY = "run.per_category"  # the per-category table and figure
V_COMPARISON_PRIMARY = "comparison.primary"  # comparison columns always shown
V_COMPARISON_QUALITY = "comparison.quality"  # the Pareto fronts' quality axes and "best" cards
V_FINDINGS_WATCHED = "findings.watched"  # what a parameter's change is said to have moved
V_FINDINGS_INTEGRITY = "findings.integrity"  # counts of requests a provider would reject, named where rows differ
V_RUN_SUMMARY_CARDS = "run.summary_cards"  # headline cards shown only for a run that made a summary
V_RECOMMEND_TIE_BREAKERS = "recommend.tie_breakers"  # `memlab recommend`'s ties, in order
V_RECOMMEND_WASTE = "recommend.waste"  # net saved, cost and full-history cost: does it cost more than the history?
_RETENTION_VIEW = (
    "context.evidence_retention",
    "context.evidence_fed_to_summary",
    "context.evidence_in_summary",
    "context.answer_coverage",
)
_RETRIEVAL_VIEW = (
    "longterm.recall@1",
    "longterm.recall@5",
    "longterm.recall@10",
    "longterm.precision@1",
    "longterm.mrr",
    "longterm.ndcg@10",
)
VIEWS: dict[str, tuple[str, ...]] = {
    V_RUN_HEADLINE: (
        "calls",
        "tokens.prompt.mean",
        "tokens.net_saved_ratio",
        "context.evidence_retention",
        "context.evidence_in_summary",
        "context.answer_coverage",
        *_RETRIEVAL_VIEW,
        "cost.usd",
        "latency.context.p50_us",
    ),
    V_RUN_RETENTION: _RETENTION_VIEW,
    V_RUN_PER_CATEGORY: (
        *_RETENTION_VIEW,
        *_RETRIEVAL_VIEW,
        "answer.f1.locomo",
        "answer.f1.mem0",
        "answer.judge",
    ),
    V_COMPARISON_PRIMARY: (
        "tokens.prompt.mean",
        "tokens.net_saved_ratio",
        "context.evidence_retention",
        *_RETRIEVAL_VIEW,
        "cost.usd",
    ),
    V_COMPARISON_QUALITY: ("context.evidence_retention", "longterm.recall@10"),
    V_FINDINGS_WATCHED: (
        "tokens.prompt.mean",
        "context.evidence_retention",
        *_RETRIEVAL_VIEW,
        "cost.usd",
    ),
    V_FINDINGS_INTEGRITY: ("context.tool_orphans", "budget.violations"),
    V_RUN_SUMMARY_CARDS: ("context.evidence_in_summary", "context.evidence_fed_to_summary"),
    V_RECOMMEND_TIE_BREAKERS: ("longterm.recall@10", "context.answer_coverage"),
    V_RECOMMEND_WASTE: ("tokens.net_saved_ratio", "cost.usd", "cost.full_history_usd"),
}


def view(name: str) -> tuple[str, ...]:
    """The metrics that lead view `name` (one of `VIEWS`), in order.

    Args:
        name: A view, e.g. `V_RUN_HEADLINE`.

    Returns:
        Its metric names; KeyError naming the known views for another name.

    >>> view(V_COMPARISON_QUALITY)
    ('context.evidence_retention', 'longterm.recall@10')
    """
    if name not in VIEWS:
        raise KeyError(f"no metric view {name!r}; known: {', '.join(VIEWS)}")
    return VIEWS[name]


def title(name: str) -> str:
    """The column title of metric `name`: its registered `short` title, else the name itself.

    Args:
        name: A metric name (a per-category suffix is ignored when looking it up).

    Returns:
        The title reports show for it.

    >>> title("tokens.net_saved_ratio"), title("tokens.prompt.max")
    ('net saved', 'tokens.prompt.max')
    """
    found = lookup(name)
    return found.short if found is not None and found.short else name


@functools.lru_cache(maxsize=4096)
def lookup(name: str) -> Metric | None:
    """The registered metric `name` is (per-category suffix ignored), or None."""
    base = _CATEGORY.sub("", name)
    exact = _BY_NAME.get(base)
    if exact is not None:
        return exact
    return next((m for m in _PATTERNS if fnmatch.fnmatchcase(base, m.name)), None)


def spec(name: str) -> Metric:
    """The registered metric `name` is; KeyError naming it when it is not registered."""
    found = lookup(name)
    if found is None:
        raise KeyError(f"metric {name!r} is not registered in memlab/metrics/registry.py")
    return found


def unregistered(names: Iterable[str]) -> list[str]:
    """The names among `names` that no registered metric covers, sorted."""
    return sorted({n for n in names if lookup(n) is None})


def direction(name: str) -> Better:
    """Which way `name` is better ("none" for an unregistered metric)."""
    found = lookup(name)
    return found.better if found is not None else NONE


def describe(names: Iterable[str]) -> dict[str, dict[str, str]]:
    """For a run's manifest: each registered name's unit, direction, format and description."""
    out = {}
    for name in sorted(names):
        m = lookup(name)
        if m is not None:
            out[name] = {"unit": m.unit, "better": m.better, "format": m.fmt, "description": m.description}
    return out


def comparison_columns() -> list[tuple[str, str]]:
    """(metric name, short title) of the comparison table's columns, in registry order."""
    return [(COLUMN_NAMES.get(m.name, m.name), m.short) for m in METRICS if m.short]


def section_of(name: str) -> str | None:
    found = lookup(name)
    return found.section if found is not None else None


def markdown_table(metrics: Iterable[Metric] = METRICS) -> str:
    """The metric table of docs/evaluation.md (a test checks the file holds exactly this)."""
    lines = ["| metric | unit | better | section | what |", "|---|---|---|---|---|"]
    for m in metrics:
        lines.append(f"| `{m.name}` | {m.unit} | {m.better} | {m.section} | {m.description} |")
    return "\n".join(lines)


def by_section(metrics: Mapping[str, Any]) -> dict[str, list[str]]:
    """The names of `metrics` per report section (in section order; unregistered names last, under "Other")."""
    out: dict[str, list[str]] = {s: [] for s in (*SECTIONS, "Other")}
    for name in sorted(metrics):
        out[section_of(name) or "Other"].append(name)
    return {s: names for s, names in out.items() if names}


_BY_NAME = {m.name: m for m in METRICS if not m.is_pattern}
_PATTERNS = tuple(m for m in METRICS if m.is_pattern)
_UNREGISTERED_IN_VIEWS = unregistered(n for names in VIEWS.values() for n in names)
if _UNREGISTERED_IN_VIEWS:
    raise ValueError(f"metric views name unregistered metrics: {_UNREGISTERED_IN_VIEWS}")
