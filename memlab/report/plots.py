"""The report's figures, drawn with matplotlib (Agg, no display) and returned as PNG bytes.

Figures carry no timestamp or software metadata, so the same data draws the same bytes.
"""

from __future__ import annotations

import io
from collections.abc import Mapping, Sequence
from typing import Any, Literal

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib import cbook
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter, LogLocator, NullLocator
from matplotlib.transforms import ScaledTranslation

DPI = 110
PALETTE = ("#2f6fed", "#e8710a", "#1e8e3e", "#c5221f", "#9334e6", "#12b5cb", "#f9ab00", "#5f6368", "#e52592", "#188038")
plt.rcParams.update(
    {
        "font.size": 10,
        "axes.spines.top": False,
        "axes.spines.right": False,
        "axes.grid": True,
        "grid.color": "#e3e7ee",
        "grid.linewidth": 0.8,
        "axes.edgecolor": "#9aa4b2",
        "axes.titleweight": "bold",
        "axes.titlesize": 11,
        "legend.frameon": False,
    }
)


# A series' colour, dash and marker all change with its number, so no two of 140 series look alike, and lines that
# coincide stay visible: their markers lie at different points (`markevery` offsets) and differ in shape. No series
# is plainly dashed: in the prompt curves that is the whole history's line.
DASHES: tuple[Any, ...] = ("solid", (0, (1, 1.6)), (0, (6, 2, 1, 2)), (0, (3, 1.5, 1, 1.5, 1, 1.5)))
MARKERS = ("o", "s", "^", "D", "v", "P", "X")
MARK_EVERY = 4
HATCHES = ("", "///", "...", "xx")
LOG_SPREAD = 8.0  # an axis turns logarithmic when its largest value is this many times its smallest


def color(i: int) -> str:
    return PALETTE[i % len(PALETTE)]


def line_style(i: int) -> dict[str, Any]:
    """Series `i`'s colour, dash and marker (unique for the first 140 series), markers staggered by series."""
    return {
        "color": color(i),
        "linestyle": DASHES[i % len(DASHES)],
        "marker": MARKERS[i % len(MARKERS)],
        "markevery": (i % MARK_EVERY, MARK_EVERY),
        "markersize": 4.5,
    }


def to_png(fig: Figure) -> bytes:
    """The figure as PNG bytes; the figure is closed."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=DPI, metadata={"Software": None})
    plt.close(fig)
    return buf.getvalue()


POSITION_BINS = 20  # the per-turn curves average dialogues of different lengths at 5% steps


def per_position_mean(calls: pd.DataFrame, column: str = "prompt_tokens") -> pd.Series:
    """Mean of `column` over dialogues at each relative position (0-100% of each dialogue's calls).

    Averaging by absolute turn mixes dialogues of different lengths: past the shortest one's
    end the mean jumps as dialogues drop out. Each dialogue's calls are placed at their share of
    its length instead, in POSITION_BINS steps, so every point averages every dialogue.
    """
    if calls.empty:
        return pd.Series(dtype=float)
    rank = calls.groupby("dialogue", sort=False).cumcount()
    size = calls.groupby("dialogue", sort=False)["turn"].transform("size")
    position = (rank / (size - 1).clip(lower=1) * POSITION_BINS).round() * (100 / POSITION_BINS)
    return calls[column].groupby(position.to_numpy()).mean().sort_index()


MARGIN = 0.08  # inches between the outermost text and the figure's edge, and between a legend and its axis


def fixed_layout(fig: Figure) -> None:
    """Margins from one measurement of the text around each axes, instead of a layout engine.

    Constrained layout measured every axis twice per save and made the save draw the figure twice: most of a
    report's figure CPU. The text around an axes (tick labels, axis labels, titles, a legend placed in inches
    below its axis) keeps its size in inches when the axes are resized, so margins measured once hold after.
    Axes stacked in one column (`latency_boxes`) are spaced by what lies between them.
    """
    renderer = fig.canvas.get_renderer()  # type: ignore[attr-defined]
    width, height = fig.get_size_inches() * fig.dpi
    pad = MARGIN * fig.dpi
    axes = [ax for ax in fig.axes if ax.get_visible()]
    frames = [ax.get_window_extent(renderer) for ax in axes]
    tights = [ax.get_tightbbox(renderer) or frame for ax, frame in zip(axes, frames, strict=True)]
    left = max(f.x0 - t.x0 for f, t in zip(frames, tights, strict=True)) + pad
    right = max(t.x1 - f.x1 for f, t in zip(frames, tights, strict=True)) + pad
    top = tights[0].y1 - frames[0].y1 + pad
    bottom = frames[-1].y0 - tights[-1].y0 + pad
    gaps = [tights[i + 1].y1 - frames[i + 1].y1 + frames[i].y0 - tights[i].y0 + pad for i in range(len(axes) - 1)]
    gap = max(gaps, default=0.0)
    rows = height - top - bottom - gap * (len(axes) - 1)
    fig.subplots_adjust(  # each margin is at least the pad: an axes' tight box holds its frame
        left=left / width,
        right=1 - right / width,
        top=1 - top / height,
        bottom=bottom / height,
        hspace=gap / (rows / len(axes)) if len(axes) > 1 else None,
    )


def _legend_below(ax: plt.Axes, n: int) -> None:
    """The legend under the axes and their x axis in columns, so labels of any length never narrow the plot."""
    fig = ax.figure
    renderer = fig.canvas.get_renderer()  # type: ignore[attr-defined]
    frame = ax.get_window_extent(renderer)
    axis = ax.xaxis.get_tightbbox(renderer) or frame
    below = (frame.y0 - axis.y0) / fig.dpi + MARGIN
    ax.legend(
        loc="upper left",
        bbox_to_anchor=(0.0, 0.0),
        bbox_transform=ax.transAxes + ScaledTranslation(0.0, -below, fig.dpi_scale_trans),
        ncol=min(3, max(1, n)),
        fontsize=8.5,
    )


def prompt_curves(
    curves: Mapping[str, pd.DataFrame], *, full_history: bool = True, datasets: Mapping[str, str] | None = None
) -> bytes:
    """`prompt_curves_figure` as PNG bytes."""
    return to_png(prompt_curves_figure(curves, full_history=full_history, datasets=datasets))


def prompt_curves_figure(
    curves: Mapping[str, pd.DataFrame], *, full_history: bool = True, datasets: Mapping[str, str] | None = None
) -> Figure:
    """Prompt tokens along the dialogue, one line per configuration, plus the full history for reference.

    Args:
        curves: Each configuration's calls (calls.csv), by its label.
        full_history: Draw the whole history's tokens (dashed).
        datasets: Each label's data (manifest.json's `data_sha256`): one full-history line per dataset, in the
            colour of its first configuration and named after the configurations that replayed it (None: one).

    A configuration whose line coincides with an earlier one's says so in the legend ("= #2"); the y axis is
    logarithmic when the largest mean is `LOG_SPREAD` times the smallest (the full history would flatten the rest).
    """
    fig, ax = plt.subplots(figsize=(8.6, 4.2), dpi=DPI)
    drawn: list[tuple[str, pd.Series]] = []
    for i, (label, calls) in enumerate(curves.items()):
        sent = per_position_mean(calls)
        if sent.empty:
            continue
        same = [short_label(other) for other, line in drawn if _coincide(sent, line)]
        shown = f"{label} (= {same[0]})" if same else label
        ax.plot(sent.index.to_numpy(), sent.to_numpy(dtype=float), linewidth=1.6, label=shown, **line_style(i))
        drawn.append((label, sent))
    if full_history:
        _full_history_lines(ax, curves, datasets or {})
    values = np.concatenate([line.get_ydata() for line in ax.get_lines()]) if ax.lines else np.array([])
    log = _log_axis(ax, "y", values)
    ax.set_xlabel("position in the dialogue (% of its calls)")
    ax.set_ylabel("prompt tokens" + (" (log scale)" if log else ""))
    ax.set_title("Prompt tokens per call (mean over dialogues)")
    ax.set_xlim(0, 100)
    if not log:
        ax.set_ylim(bottom=0)
    if ax.lines:
        _legend_below(ax, len(ax.lines))
    fixed_layout(fig)
    return fig


def _log_axis(ax: plt.Axes, axis: Literal["x", "y"], values: np.ndarray) -> bool:
    """Make `ax`'s `axis` logarithmic if the largest of the finite `values` above 0 is `LOG_SPREAD` times the
    smallest, its ticks at 1, 2 and 5 of each decade, in thousands-separated tokens; whether it did."""
    positive = values[np.isfinite(values) & (values > 0)]
    if not (positive.size > 1 and positive.max() >= LOG_SPREAD * positive.min()):
        return False
    limits = (positive.min() / 1.35, positive.max() * 1.35)
    if axis == "x":
        ax.set_xscale("log")
        ax.set_xlim(*limits)
    else:
        ax.set_yscale("log")
        ax.set_ylim(*limits)
    ticks = ax.xaxis if axis == "x" else ax.yaxis
    ticks.set_major_locator(LogLocator(subs=(1.0, 2.0, 5.0)))
    ticks.set_major_formatter(FuncFormatter(lambda v, _: f"{v:,.0f}"))
    ticks.set_minor_locator(NullLocator())  # unlabelled minor ticks cost most of a log axis's layout
    return True


def short_label(label: str) -> str:
    """A comparison's row tag ("#2" of "#2 trim, 1000"), or the whole label when it has none."""
    head = label.split(" ", 1)[0]
    return head if head.startswith("#") and head[1:].isdigit() else label


def _coincide(a: pd.Series, b: pd.Series) -> bool:
    """Whether two curves lie on each other (within 0.1% or half a token at every point)."""
    return a.index.equals(b.index) and bool(np.allclose(a.to_numpy(float), b.to_numpy(float), rtol=1e-3, atol=0.5))


def _full_history_lines(ax: plt.Axes, curves: Mapping[str, pd.DataFrame], datasets: Mapping[str, str]) -> None:
    """One dashed full-history line per dataset: grey when all share one, else its first configuration's colour."""
    groups: dict[str, list[tuple[int, str]]] = {}
    for i, (label, calls) in enumerate(curves.items()):
        if not calls.empty:
            groups.setdefault(datasets.get(label, ""), []).append((i, label))
    for members in groups.values():
        first, label = members[0]
        full = per_position_mean(curves[label], "full_tokens")
        if len(groups) == 1:
            colour, name = "#9aa4b2", "full history"
        else:
            colour, name = color(first), "full history, data of " + ", ".join(short_label(m) for _, m in members)
        ax.plot(
            full.index.to_numpy(), full.to_numpy(dtype=float), color=colour, linewidth=1.2, linestyle="--", label=name
        )


def grouped_bars(
    values: Mapping[str, Mapping[str, float | None]], *, title: str, ylabel: str, percent: bool = True
) -> bytes:
    """Bars per group (x) and series (legend): `values[series][group]`."""
    series = list(values)
    groups = sorted({g for s in values.values() for g in s}, key=_natural)
    fig, ax = plt.subplots(figsize=(8.6, 3.6), dpi=DPI)
    width = 0.8 / max(1, len(series))
    x = np.arange(len(groups))
    for i, name in enumerate(series):
        heights = [values[name].get(g) for g in groups]
        ys = [np.nan if h is None else (100 * h if percent else h) for h in heights]
        ax.bar(x + (i - (len(series) - 1) / 2) * width, ys, width * 0.92, color=color(i), label=name)
    ax.set_xticks(x, groups)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    if percent:
        ax.set_ylim(0, 105)
    ax.grid(axis="x", visible=False)
    _legend_below(ax, len(series))
    fixed_layout(fig)
    return to_png(fig)


WHISKERS = (5.0, 95.0)  # percentiles the latency boxes' whiskers end at
LATENCY_AXIS = "µs per call (log scale); box p25-p75, whiskers p5-p95, calls beyond not drawn"
LATENCY_NOTE = "whiskers at p5 and p95 (the table's p95), calls beyond them not drawn"


def latency_boxes(samples: Mapping[str, pd.DataFrame]) -> bytes:
    """Latency distribution of each timed stage, one box per configuration (log scale).

    One row per stage on a shared axis: side by side, seven stages (three plus four parts) left each
    panel too narrow for its configuration labels and the layout collapsed. The whiskers end at p5 and p95 (the
    reports' tables give p50 and p95), not at 1.5 IQR, and the calls beyond are not drawn: thousands of dots.
    """
    stages = sorted({s for frame in samples.values() for s in frame["stage"].unique()})
    rows = [(stage, _stage_boxes(samples, stage)) for stage in stages] or [("", ([], []))]
    heights = [0.7 + 0.28 * max(1, len(labels)) for _, (labels, _) in rows]
    fig, axes = plt.subplots(
        len(rows),
        1,
        dpi=DPI,
        figsize=(8.6, 0.6 + sum(heights)),
        sharex=True,
        squeeze=False,
        gridspec_kw={"height_ratios": heights},
    )
    for ax, (stage, (labels, data)) in zip(axes[:, 0], rows, strict=True):
        for i, patch in enumerate(_boxes(ax, data)):
            patch.set_facecolor(color(i))
            patch.set_hatch(HATCHES[(i // len(PALETTE)) % len(HATCHES)])
            patch.set_alpha(0.75)
        ax.set_yticks(range(1, len(labels) + 1), labels, fontsize=8)
        ax.set_xscale("log")
        ax.xaxis.set_minor_locator(NullLocator())  # a log axis's minor ticks were half its layout's CPU
        ax.set_title(stage, loc="left", fontsize=10)
    axes[-1, 0].set_xlabel(LATENCY_AXIS)
    fixed_layout(fig)
    return to_png(fig)


def _boxes(ax: plt.Axes, data: list[np.ndarray]) -> list[Any]:
    """Horizontal boxes of `data` (p25-p75) whose whiskers end at the `WHISKERS` percentiles themselves (matplotlib's
    `whis` ends them at the furthest call within, below the tables' p95); the calls beyond are not drawn."""
    if not data:
        return []
    stats = cbook.boxplot_stats(data, whis=WHISKERS)
    for st, values in zip(stats, data, strict=True):
        st["whislo"], st["whishi"] = np.percentile(values, WHISKERS)
    return list(ax.bxp(stats, orientation="horizontal", patch_artist=True, showfliers=False, widths=0.6)["boxes"])


def _stage_boxes(samples: Mapping[str, pd.DataFrame], stage: str) -> tuple[list[str], list[np.ndarray]]:
    """The configurations that timed `stage` and their timings (at least 1 µs, for the log axis)."""
    labels, data = [], []
    for label, frame in samples.items():
        values = frame.loc[frame["stage"] == stage, "latency_us"].to_numpy(dtype=float)
        if values.size:
            labels.append(label)
            data.append(np.maximum(values, 1.0))
    return labels, data


def pareto_plot(
    points: pd.DataFrame, x: str, y: str, front: Sequence[bool], tags: Sequence[str], *, xlabel: str, ylabel: str
) -> bytes:
    """`pareto_figure` as PNG bytes."""
    return to_png(pareto_figure(points, x, y, front, tags, xlabel=xlabel, ylabel=ylabel))


def pareto_figure(
    points: pd.DataFrame, x: str, y: str, front: Sequence[bool], tags: Sequence[str], *, xlabel: str, ylabel: str
) -> Figure:
    """Configurations as points tagged with their row numbers (x lower is better, y higher) and the Pareto front.

    Points at the same place share one tag ("0, 11, 13-16"); the x axis is logarithmic when one configuration
    sends `LOG_SPREAD` times more than another (the full history would squeeze the rest into a corner); tags are
    placed where they overlap no other tag or point (`place_labels`).
    """
    fig, ax = plt.subplots(figsize=(6.8, 4.4), dpi=DPI)
    xs, ys = points[x].to_numpy(dtype=float), points[y].to_numpy(dtype=float) * 100
    on = np.array(front, dtype=bool)
    for where, size, colour, z, label in (
        (~on, 46, "#9aa4b2", 3, "dominated"),
        (on, 60, PALETTE[0], 4, "Pareto front"),
    ):
        if where.any():  # a legend entry only for points drawn (one run: nothing is dominated)
            ax.scatter(xs[where], ys[where], s=size, color=colour, zorder=z, label=label, clip_on=False)
    order = np.argsort(xs[on])
    ax.step(xs[on][order], ys[on][order], where="post", color=PALETTE[0], linewidth=1.2, alpha=0.7)
    log = _log_axis(ax, "x", xs)
    ax.set_xlabel(xlabel + (" (log scale)" if log else ""))
    ax.set_ylabel(ylabel)
    ax.set_title(f"{ylabel} vs {xlabel}")
    if not log:
        ax.set_xlim(*_fitted(xs, floor=0.0))
    ax.set_ylim(*_fitted(ys, floor=0.0, ceiling=100.0))
    _legend_below(ax, len(ax.collections))  # outside the axes: inside, it lay on the front's line and points
    groups: dict[tuple[float, float], list[str]] = {}
    for tag, px, py in zip(tags, xs, ys, strict=True):
        if np.isfinite(px) and np.isfinite(py):
            groups.setdefault((float(px), float(py)), []).append(str(tag))
    fixed_layout(fig)  # before the tags, which are left out of it (set_in_layout(False))
    place_labels(ax, [(tag_ranges(t), px, py) for (px, py), t in groups.items()])
    return fig


def tag_ranges(tags: Sequence[str]) -> str:
    """Row numbers as short runs.

    >>> tag_ranges(["0", "11", "13", "14", "15", "16", "3"])
    '0, 3, 11, 13-16'
    """
    numbers = sorted(int(t) for t in tags if t.isdigit())
    runs: list[list[int]] = []
    for n in numbers:
        if runs and n == runs[-1][-1] + 1:
            runs[-1].append(n)
        else:
            runs.append([n])
    parts = [str(r[0]) if len(r) == 1 else f"{r[0]}-{r[-1]}" if len(r) > 2 else f"{r[0]}, {r[1]}" for r in runs]
    return ", ".join(parts + [t for t in tags if not t.isdigit()])


# Where a tag may go, in points from its point (tried in order, then again further out).
_OFFSETS = ((6, 5), (6, -13), (-6, 5), (-6, -13), (0, 12), (0, -20), (12, -4), (-12, -4))
_RINGS = 6


def place_labels(ax: plt.Axes, labels: Sequence[tuple[str, float, float]]) -> list[Any]:
    """Annotate each (text, x, y), choosing for each the first offset whose box overlaps no placed tag and no point.

    Greedy and deterministic (labels in the given order); a tag that finds no free place within `_RINGS`
    rings takes the one overlapping least, joined to its point by a thin line. Beyond a library such as
    adjustText, which moves labels apart by repulsion but does not promise disjoint boxes, this checks them.
    The figure is laid out before (`fixed_layout`): the tags are placed in display pixels.
    """
    fig = ax.figure
    renderer = fig.canvas.get_renderer()  # type: ignore[attr-defined]
    frame = ax.get_window_extent(renderer)
    taken = [_dot_box(ax, px, py) for _, px, py in labels]
    legend = ax.get_legend()
    if legend is not None:
        taken.append(legend.get_window_extent(renderer))
    placed = []
    for text, px, py in labels:
        best: tuple[float, tuple[float, float], Any] | None = None
        for ring in range(_RINGS):
            for dx, dy in _OFFSETS:
                offset = (dx * (1 + 1.2 * ring), dy * (1 + 1.2 * ring))
                note = _tag(ax, text, px, py, offset)
                box = note.get_window_extent(renderer).expanded(1.06, 1.12)
                note.remove()
                clash = sum(_area(box, other) for other in taken) + _outside(box, frame)
                if best is None or clash < best[0]:
                    best = (clash, offset, box)
                if clash == 0:
                    break
            if best is not None and best[0] == 0:
                break
        assert best is not None
        clash, offset, box = best
        far = clash > 0 or abs(offset[0]) > 20 or abs(offset[1]) > 24  # a line shows whose tag it is
        placed.append(_tag(ax, text, px, py, offset, line=far))
        taken.append(box)
    return placed


def _tag(ax: plt.Axes, text: str, px: float, py: float, offset: tuple[float, float], line: bool = False) -> Any:
    arrow = {"arrowstyle": "-", "color": "#9aa4b2", "linewidth": 0.6, "shrinkA": 0, "shrinkB": 4} if line else None
    note = ax.annotate(
        text,
        (px, py),
        textcoords="offset points",
        xytext=offset,
        ha="left" if offset[0] >= 0 else "right",
        fontsize=8.5,
        color="#1d2433",
        annotation_clip=False,
        arrowprops=arrow,
    )
    note.set_in_layout(False)
    return note


def _dot_box(ax: plt.Axes, px: float, py: float) -> Any:
    """A point's marker as a box in display pixels (about 8 points across)."""
    from matplotlib.transforms import Bbox

    cx, cy = ax.transData.transform((px, py))
    half = 4.5 * ax.figure.dpi / 72
    return Bbox([[cx - half, cy - half], [cx + half, cy + half]])


def _area(a: Any, b: Any) -> float:
    w = min(a.x1, b.x1) - max(a.x0, b.x0)
    h = min(a.y1, b.y1) - max(a.y0, b.y0)
    return max(w, 0.0) * max(h, 0.0)


def _outside(box: Any, frame: Any) -> float:
    """How much of `box` lies outside the axes (a tag over the axis labels reads as one)."""
    inside = _area(box, frame)
    return box.width * box.height - inside


def _fitted(values: np.ndarray, *, floor: float, ceiling: float | None = None) -> tuple[float, float]:
    """Axis limits around `values` with a margin, so close points stay apart (never below `floor`, above `ceiling`)."""
    finite = values[np.isfinite(values)]
    if finite.size == 0:
        return floor, ceiling if ceiling is not None else 1.0
    low, high = float(finite.min()), float(finite.max())
    pad = max((high - low) * 0.12, abs(high) * 0.05, 0.5)
    top = high + pad if ceiling is None else min(ceiling, high + pad)  # a share ends at 100%
    return max(floor - pad / 2, low - pad), top


def _natural(text: str) -> tuple[int, str]:
    return (int(text), "") if text.isdigit() else (10**9, text)
