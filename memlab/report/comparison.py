"""A comparison of runs: one row per configuration, the Pareto fronts, curves and latency plots.

Rows are labelled by the overrides that differ between the runs (`context=trim`), read from
each run's manifest; runs made without overrides are labelled by the config keys that differ.
Written by the sweep callback into the sweep directory and by `memlab report DIR...`.
"""

from __future__ import annotations

import io
import os
import textwrap
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from memlab.metrics.registry import V_COMPARISON_PRIMARY, V_COMPARISON_QUALITY, comparison_columns, lookup, title, view
from memlab.report import html
from memlab.report.budget import budget_columns, budget_from_row
from memlab.report.findings import DATA, findings, front_column, pareto_front
from memlab.report.fmt import fmt_value, is_missing
from memlab.report.run_report import NO_PLOTS_NOTE, plots_wanted
from memlab.report.rundata import COMPARISON_HTML, RunData
from memlab.report.table import Table
from memlab.rundir import canonical_json, write_files

if TYPE_CHECKING:
    from matplotlib.figure import Figure

# Columns of the human tables, in registry order, and their titles (comparison.csv keeps every metric).
SUMMARY_METRICS = tuple(name for name, _ in comparison_columns())
SHORT_NAMES = dict(comparison_columns())
TOKENS = "tokens.prompt.mean"
# Always shown; the other summary columns only where the configurations differ.
PRIMARY = view(V_COMPARISON_PRIMARY)
QUALITY = view(V_COMPARISON_QUALITY)
IGNORED_CONFIG_KEYS = ("output_dir", "hydra")
MD_WIDTH = 110  # comparison.md's prose lines, so a terminal or a diff shows them whole
KEY_CHARS = 28  # the longest label a figure shows; the table's row number identifies the rest
NOT_SET = "(not set)"  # a swept key a run left as its config had it, where the config does not say
DATA_DIGITS = 12  # of a run's data_sha256, in the table's DATA column: the Pareto fronts are per dataset
NOT_MEASURED = "not measured"  # the Pareto cell of a run whose quality metrics are undefined: on no front, under none


def _parse_override(text: str) -> tuple[str, str]:
    key, _, value = text.lstrip("+~").partition("=")
    return key, value


def _flatten(node: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(node, Mapping):
        out: dict[str, Any] = {}
        for k, v in node.items():
            out.update(_flatten(v, f"{prefix}{k}."))
        return out
    return {prefix[:-1]: repr(node) if isinstance(node, list) else node}


def _differing(maps: Sequence[Mapping[str, Any]]) -> list[str]:
    """Keys whose values differ between the maps, in order of first appearance."""
    keys = list(dict.fromkeys(k for m in maps for k in m))
    return [k for k in keys if len({repr(m.get(k)) for m in maps}) > 1]


def _config_labels(runs: Sequence[RunData]) -> list[list[str]]:
    flat = [{k: v for k, v in _flatten(r.config).items() if not k.startswith(IGNORED_CONFIG_KEYS)} for r in runs]
    keys = _differing(flat)
    targets = {k[: -len("._target_")] for k in keys if k.endswith("._target_")}
    labels = []
    for f in flat:
        parts = []
        for k in keys:
            node = next((t for t in sorted(targets, key=len) if k == f"{t}._target_" or k.startswith(f"{t}.")), None)
            if node is None:
                parts.append(f"{k}={f.get(k)}")
            elif k == f"{node}._target_":
                parts.append(f"{node}={str(f.get(k, 'none')).rsplit('.', 1)[-1]}")
            elif k in f:  # a parameter of the node: shown when it differs among runs of the same target
                peers = [g for g in flat if g.get(f"{node}._target_") == f.get(f"{node}._target_")]
                if len({repr(g.get(k)) for g in peers}) > 1:
                    parts.append(f"{k}={f[k]}")
        labels.append(parts)
    return labels


def _overrides(run: RunData) -> dict[str, str]:
    return dict(_parse_override(o) for o in (run.manifest.get("overrides") or (run.error or {}).get("overrides") or []))


def override_spellings(runs: Sequence[RunData]) -> dict[str, str]:
    """Each override key the runs' command lines wrote with a prefix, as written: a label's `experiment/peers` is
    `+experiment/peers` (a group the defaults list lacks), for a label to be pasted back as overrides."""
    given = (o.partition("=")[0] for r in runs for o in r.manifest.get("overrides") or [])
    return {key.lstrip("+~"): key for key in given if key != key.lstrip("+~")}


def swept_parameters(runs: Sequence[RunData]) -> dict[str, list[str]]:
    """Each override key whose value differs between the runs, with every run's value.

    A run that did not set the key shows the value its config had, or NOT_SET (a group's entry is no config key:
    "default" read as the entry of that name, `debug=default`, which the run had not chosen).
    """
    overrides = [_overrides(r) for r in runs]
    flat = [_flatten(r.config) for r in runs]
    return {
        key: [o.get(key, str(f.get(key, NOT_SET))) for o, f in zip(overrides, flat, strict=True)]
        for key in _differing(overrides)
    }


def run_labels(runs: Sequence[RunData]) -> list[str]:
    """A short, distinct label per run: the overrides (or config keys) whose values differ.

    Args:
        runs: Runs read back (`load_run`).
    """
    params = swept_parameters(runs)
    labels = [" ".join(f"{k}={v[i]}" for k, v in params.items()) for i in range(len(runs))]
    if len(set(labels)) < len(runs) and all(r.config for r in runs):
        labels = [" ".join(parts) for parts in _config_labels(runs)]
    if len(set(labels)) < len(runs) or not all(labels):
        labels = [lbl or r.path.name for lbl, r in zip(labels, runs, strict=True)]
    if len(set(labels)) < len(runs):
        labels = [f"{lbl} [{r.path.name}]" for lbl, r in zip(labels, runs, strict=True)]
    return labels


def inert_parameters(runs: Sequence[RunData]) -> list[str]:
    """Swept keys that changed no metric: every set of runs differing only in that key has identical metrics.

    Read from the finished runs' overrides and `metrics.json` (latencies aside). A key that no pair of runs
    isolates (it always changes together with another) is not judged.
    """
    done = [r for r in runs if not r.failed]
    overrides = [dict(_parse_override(o) for o in r.manifest.get("overrides") or []) for r in done]
    inert = []
    for key in _differing(overrides):
        groups: dict[str, list[int]] = {}
        for i, o in enumerate(overrides):
            rest = sorted((k, v) for k, v in o.items() if k != key)
            groups.setdefault(repr(rest), []).append(i)
        isolated = [g for g in groups.values() if len({overrides[i].get(key) for i in g}) > 1]
        if isolated and all(len({canonical_json(done[i].metrics) for i in g}) == 1 for g in isolated):
            inert.append(key)
    return inert


def comparison_table(runs: Sequence[RunData]) -> pd.DataFrame:
    """One row per run: label, status, error, run directory and every metric (latencies included).

    Args:
        runs: Runs read back (`load_run`), failed jobs included.
    """
    labels = run_labels(runs)
    params = swept_parameters(runs)
    rows = []
    for i, (label, run) in enumerate(zip(labels, runs, strict=True)):
        row: dict[str, Any] = {
            "label": label,
            **{f"param.{k}": v[i] for k, v in params.items()},
            "ignored": " ".join(sorted(run.manifest.get("ignored") or {})),
            "status": "failed" if run.failed else "ok",
            "error": " ".join(f"{run.error.get('type')}: {run.error.get('message')}".split()) if run.error else "",
            "run_dir": str(run.path),
            DATA: str(run.manifest.get("data_sha256") or "")[:DATA_DIGITS],
            **budget_columns(run.config),
        }
        row.update(run.all_metrics())
        rows.append(row)
    frame = pd.DataFrame(rows)
    for metric in QUALITY:
        column = front_column(metric)
        if (
            metric in frame and TOKENS in frame
        ):  # a front per dataset: tokens and retention of other data do not compare
            frame[column] = pd.array([None] * len(frame), dtype="boolean")
            for _, group in frame.groupby(DATA, sort=False):
                frame.loc[group.index, column] = pareto_front(group[TOKENS].tolist(), group[metric].tolist())
    return frame


def _display(frame: pd.DataFrame, *, html_badges: bool = False) -> pd.DataFrame:
    """The human table: the summary metrics that some run reports, minus secondary ones equal in every run."""
    ok = frame[frame["status"] == "ok"]

    def shown_metric(m: str) -> bool:
        if m not in frame or frame[m].isna().all():
            return False
        return m in PRIMARY or len(ok) < 2 or ok[m].astype(str).nunique() > 1

    params = [c for c in frame.columns if c.startswith("param.")]
    shown = pd.DataFrame({"#": [str(i) for i in range(len(frame))]})
    for c in params or ["label"]:  # the swept parameters, one column each, or the label
        ignored = [c.removeprefix("param.") in str(x).split() for x in frame.get("ignored", [""] * len(frame))]
        shown[param_title(c.removeprefix("param."))] = [
            f"{v} (ignored)" if i else str(v) for v, i in zip(frame[c], ignored, strict=True)
        ]
    for c in ["status", *[m for m in SUMMARY_METRICS if shown_metric(m)]]:
        shown[c] = [fmt_value(c, v) for v in frame[c]]
        if c == TOKENS:  # the configured budget beside the tokens measured
            budgets = [budget_from_row(r) for r in frame.to_dict("records")]
            if any(budgets):
                shown["budget"] = [str(b) if b else "—" for b in budgets]
    fronts = [c for c in frame.columns if c.startswith("pareto.")]
    if fronts and any(frame[c].any() for c in fronts):
        shown["pareto"] = [_pareto_cell(frame, i, fronts) for i in frame.index]
    if html_badges:
        shown["status"] = [f'<span class="badge {s}">{s}</span>' for s in frame["status"]]
        if "pareto" in shown:
            shown["pareto"] = [
                f'<span class="muted">{v}</span>'
                if v == NOT_MEASURED
                else " ".join(f'<span class="badge pareto">{p}</span>' for p in v.split(", ") if p)
                for v in shown["pareto"]
            ]
    return shown


def _pareto_cell(frame: pd.DataFrame, i: Any, fronts: Sequence[str]) -> str:
    """The fronts row `i` is on, or NOT_MEASURED when it measures none of their metrics (neither on nor off one)."""
    on = [
        c.split(".", 1)[1].replace("evidence_", "") for c in fronts if frame.loc[i, c] is not pd.NA and frame.loc[i, c]
    ]
    measured = [m for m in QUALITY if front_column(m) in fronts and not is_missing(frame.loc[i, m])]
    if not on and not measured and frame.loc[i, "status"] == "ok":
        return NOT_MEASURED
    return ", ".join(on)


def param_title(key: str) -> str:
    """A swept key as a column title: a config group's entry by the group's last name (`experiment/peers`: peers).

    >>> param_title("experiment/peers"), param_title("context.max_tokens")
    ('peers', 'context.max_tokens')
    """
    return key.rsplit("/", 1)[-1]


def _bullet(text: str) -> str:
    """A markdown list item wrapped at `MD_WIDTH`."""
    return textwrap.fill(text, MD_WIDTH, initial_indent="- ", subsequent_indent="  ", break_on_hyphens=False)


def _markdown(shown: pd.DataFrame) -> str:
    """A table with the registry's short column titles."""
    return Table.from_frame(shown.rename(columns=lambda c: SHORT_NAMES.get(c) or c)).to_markdown()


def plot_keys(frame: pd.DataFrame) -> list[str]:
    """Short keys for figures ("#3 sliding_window, 4000"): the table's row number and cut-down values."""
    params = [c for c in frame.columns if c.startswith("param.")]
    keys = []
    for i in range(len(frame)):
        text = ", ".join(str(frame.iloc[i][c]) for c in params) if params else str(frame.iloc[i]["label"])
        keys.append(f"#{i} {text[: KEY_CHARS - 1] + '…' if len(text) > KEY_CHARS else text}".rstrip())
    return keys


def glossary(frame: pd.DataFrame) -> list[tuple[str, str, str]]:
    """(metric, column title, description) of each metric the human table shows, from the metric registry."""
    shown = set(_display(frame).columns)
    out = []
    for name in SUMMARY_METRICS:
        metric = lookup(name)
        if name in shown and metric is not None:
            better = f" ({metric.better} is better)" if metric.better in ("higher", "lower") else ""
            out.append((name, title(name), metric.description + better))
    return out


def inert_note(keys: Sequence[str]) -> str:
    """The comparison's flag for swept parameters that changed nothing ("" when there are none)."""
    if not keys:
        return ""
    names = ", ".join(keys)
    settings = [k for k in keys if "." in k]  # a group's choice (context=...) reaches the run: it is what runs
    hint = f"; check that {', '.join(settings)} reaches the strategy" if settings else ""
    return (
        f"Swept but changed no metric: {names} (runs differing only in it have identical metrics.json: "
        f"its values measure the same here{hint})"
    )


def data_note(runs: Sequence[RunData]) -> str:
    """The comparison's flag for finished runs that replayed different data ("" when they replayed the same).

    Read from each manifest's `data_sha256`: a seed sweep of synthetic data, or runs of other datasets or
    selections, differ by their data as well as by their configuration.

    Args:
        runs: Runs read back (`load_run`).
    """
    hashes = {r.manifest.get("data_sha256") for r in runs if not r.failed and r.manifest.get("data_sha256")}
    if len(hashes) < 2:
        return ""
    return (
        f"The runs replayed {len(hashes)} different datasets (manifest.json's data_sha256: a seed, a dataset or its "
        "selection differs), so their metrics differ by their data as well as their configuration; compare "
        "configurations on the same data"
    )


def cautions(runs: Sequence[RunData]) -> list[str]:
    """What a reader of the comparison must know before the table: keys that changed nothing, different data.

    Args:
        runs: Runs read back (`load_run`).
    """
    return [note for note in (inert_note(inert_parameters(runs)), data_note(runs)) if note]


def comparison_md(frame: pd.DataFrame, title: str, notes: Sequence[str] = ()) -> str:
    out = [f"# {title}", "", f"{len(frame)} configurations, {int((frame['status'] == 'failed').sum())} failed.", ""]
    for note in notes:
        out += [f"> **{note}.**", ""]
    shown = _display(frame)
    metrics = [c for c in shown.columns if c in SHORT_NAMES]
    # Two tables a terminal can show: what configures each row and its primary metrics, then the rest.
    main = [c for c in shown.columns if c not in metrics or c in PRIMARY]
    out += [_markdown(shown[main]), ""]
    rest = [c for c in metrics if c not in PRIMARY]
    if rest:
        out += ["## More metrics", "", _markdown(shown[["#", *rest]]), ""]
    shows = findings(frame)
    if shows:
        out += [
            "## What this shows",
            "",
            *map(_bullet, shows),
        ]
        out.append("")
    failed = frame[frame["status"] == "failed"]
    if not failed.empty:
        out += [
            "## Failed configurations",
            "",
            Table.from_frame(failed[["label", "error", "run_dir"]]).to_markdown(),
            "",
        ]
    fronts = [SHORT_NAMES[m] for m in QUALITY if front_column(m) in frame and frame[front_column(m)].any()]
    pareto = (  # only the fronts this comparison computed: tau-bench measures neither quality
        f"Pareto: not dominated in prompt tokens per call (lower is better) against {' or '.join(fronts)} "
        "(higher is better). "
        if fronts
        else ""
    )
    out += [
        *textwrap.wrap(pareto + "Latencies are this machine's; compare them only as ratios.", MD_WIDTH),
        "",
        "## Metrics",
        "",
        *[_bullet(f"`{name}` ({title}): {about}") for name, title, about in glossary(frame)],
    ]
    return "\n".join(out) + "\n"


def pareto_figures(frame: pd.DataFrame) -> list[tuple[Figure, str]]:
    """The Pareto plots of a comparison (prompt tokens against each quality metric some run measures), captioned."""
    from memlab.report import plots  # matplotlib: imported only when a comparison draws

    out = []
    okf = frame[frame["status"] == "ok"]
    row_number = {i: n for n, i in enumerate(frame.index)}  # the table's "#"
    for metric in QUALITY:
        name = title(metric)
        column = front_column(metric)
        if column in okf and TOKENS in okf and not okf[metric].isna().all():
            pts = okf.dropna(subset=[metric, TOKENS])
            tags = [str(row_number[i]) for i in pts.index]
            fig = plots.pareto_figure(
                pts, TOKENS, metric, pts[column].tolist(), tags, xlabel="prompt tokens per call", ylabel=f"{name} (%)"
            )
            caption = f"Pareto front: prompt tokens against {name} (points numbered as the table's rows)"
            left_out = [str(row_number[i]) for i in okf.index if i not in pts.index]
            if left_out:
                caption += f"; not plotted, {name} not measured (undefined): " + ", ".join(f"#{t}" for t in left_out)
            out.append((fig, caption))
    return out


def comparison_html(
    frame: pd.DataFrame, runs: Sequence[RunData], title: str, subtitle: Sequence[str] = (), notes: Sequence[str] = ()
) -> str:
    ok = [(key, run) for key, run in zip(plot_keys(frame), runs, strict=True) if not run.failed]
    shows = findings(frame)
    text_columns = ("label", *[param_title(c.removeprefix("param.")) for c in frame.columns if c.startswith("param.")])
    body = [
        *[f'<div class="banner">{html.prose(note)}.</div>' for note in notes],
        html.cards(
            [
                ("configurations", str(len(frame)), "rows below"),
                ("failed", str(int((frame["status"] == "failed").sum())), "marked in red"),
                *_best_cards(frame),
            ]
        ),
        "<h2>What this shows</h2><ul>" + "".join(f"<li>{html.prose(x)}</li>" for x in shows) + "</ul>" if shows else "",
        "<h2>Configurations</h2>",
        html.table(
            _display(frame, html_badges=True),
            text_columns=text_columns,
            raw_columns=("status", "pareto"),
            headers=SHORT_NAMES,
            row_classes=["failed" if s == "failed" else "" for s in frame["status"]],
        ),
    ]
    wanted = any(plots_wanted(run) for _, run in ok)  # report.plots=false in every run (debug=default): no figures
    figures = _figures(frame, ok) if wanted else []
    if ok and not wanted:
        body.append(f'<p class="muted">{html.esc(NO_PLOTS_NOTE)}</p>')
    if figures:
        body.append(f'<h2>Figures</h2><div class="grid2">{"".join(figures)}</div>')
    failed = frame[frame["status"] == "failed"]
    if not failed.empty:
        body.append(
            "<h2>Failed configurations</h2>"
            + html.table(failed[["label", "error", "run_dir"]], text_columns=("label", "error", "run_dir"))
        )
    terms = glossary(frame)
    if terms:
        body.append(
            "<h2>Metrics</h2><dl>"
            + "".join(f"<dt>{html.esc(t)} <code>{html.esc(n)}</code></dt><dd>{html.prose(a)}</dd>" for n, t, a in terms)
            + "</dl>"
        )
    footer = "memlab · comparison.csv holds every metric of every configuration · latencies vary per machine"
    return html.page(title, list(subtitle), "".join(body), footer)


def _figures(frame: pd.DataFrame, ok: Sequence[tuple[str, RunData]]) -> list[str]:
    """The comparison's figures: Pareto fronts, prompt curves and latency boxes of the runs that finished."""
    from memlab.report import plots

    figures = [html.figure(plots.to_png(fig), caption) for fig, caption in pareto_figures(frame)]
    curves = {label: run.calls.frame() for label, run in ok if not run.calls.empty}
    if curves:
        datasets = {label: str(run.manifest.get("data_sha256") or "") for label, run in ok if label in curves}
        several = len(set(datasets.values())) > 1
        figures.append(
            html.figure(
                plots.prompt_curves(curves, datasets=datasets),
                "Prompt tokens along the dialogue, per configuration (dashed: the whole history"
                + (" of each dataset, in the colour of the first configuration that replayed it)" if several else ")"),
            )
        )
    samples = {label: run.latency_samples.frame() for label, run in ok if not run.latency_samples.empty}
    if samples:
        caption = f"Latency distributions per step (this machine); {plots.LATENCY_NOTE}"
        figures.append(html.figure(plots.latency_boxes(samples), caption))
    return figures


def _best_cards(frame: pd.DataFrame) -> list[tuple[str, str, str]]:
    ok = [r for r in frame.to_dict("records") if r["status"] == "ok"]
    out = []
    for metric, name, pick in (
        (TOKENS, "fewest tokens", min),
        *((m, f"best {title(m)}", max) for m in QUALITY),
    ):
        defined = [r for r in ok if not is_missing(r.get(metric))]
        if defined:
            row = pick(defined, key=lambda r: float(r[metric]))
            out.append((name, fmt_value(metric, row[metric]), str(row["label"])))
    return out


def sweep_title(name: str) -> str:
    """A sweep's comparison title, as the sweep writes it and `memlab report` rebuilds it.

    Args:
        name: The sweep's `name`.
    """
    return f"memlab sweep: {name}"


def where_runs_are(runs: Sequence[RunData]) -> str:
    """Where the compared run directories are: their common parent, or each of them when they share none but /.

    Args:
        runs: Runs read back (`load_run`).
    """
    paths = [str(r.path) for r in runs]
    if len(paths) == 1:
        return f"1 run directory: {paths[0]}"
    parent = os.path.commonpath(paths) if len({os.path.isabs(p) for p in paths}) == 1 else ""
    if parent in ("", os.sep):
        return f"{len(paths)} run directories: {', '.join(paths)}"
    return f"{len(paths)} run directories under {parent}"


def write_comparison(
    out_dir: Path, runs: Sequence[RunData], title: str | None = None, notes: Sequence[str] | None = None
) -> dict[str, Path]:
    """Write comparison.csv, comparison.md and comparison.html into `out_dir`, all three or none; returns their paths.

    Args:
        out_dir: The folder the files go to.
        runs: Runs read back (`load_run`).
        title: The report's title (None: the finished runs' names; a failed job's folder names no run).
        notes: The `cautions` the caller also prints (None: computed here).
    """
    frame = comparison_table(runs)
    names = dict.fromkeys(r.name for r in runs if not r.failed) or dict.fromkeys(r.name for r in runs)
    title = title or "memlab comparison: " + ", ".join(names)
    notes = cautions(runs) if notes is None else notes
    subtitle = [html.esc(where_runs_are(runs))]
    csv = io.StringIO()
    frame.to_csv(csv, index=False)
    files = {
        "comparison.csv": csv.getvalue(),
        "comparison.md": comparison_md(frame, title, notes),
        COMPARISON_HTML: comparison_html(frame, runs, title, subtitle, notes),
    }
    return write_files(out_dir, files)  # as one set: Ctrl-C leaves the old files or all three new
