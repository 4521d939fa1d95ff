"""The report's figures, drawn with matplotlib (Agg, no display) and returned as PNG bytes.

Figures carry no timestamp or software metadata, so the same data draws the same bytes.
"""

from __future__ import annotations

import io
from collections.abc import Mapping, Sequence

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.figure import Figure

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


def color(i: int) -> str:
    return PALETTE[i % len(PALETTE)]


def to_png(fig: Figure) -> bytes:
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


def _legend_below(ax: plt.Axes, n: int) -> None:
    """The legend under the axes in columns, so labels of any length never narrow the plot."""
    ax.legend(loc="upper left", bbox_to_anchor=(0.0, -0.16), ncol=min(3, max(1, n)), fontsize=8.5)


def prompt_curves(curves: Mapping[str, pd.DataFrame], *, full_history: bool = True) -> bytes:
    """Prompt tokens along the dialogue, one line per configuration, plus the full history for reference."""
    fig, ax = plt.subplots(layout="constrained", figsize=(8.6, 4.2))
    drawn_full = False
    for i, (label, calls) in enumerate(curves.items()):
        sent = per_position_mean(calls)
        if sent.empty:
            continue
        ax.plot(sent.index.to_numpy(), sent.to_numpy(dtype=float), color=color(i), linewidth=1.6, label=label)
        if full_history and not drawn_full:
            full = per_position_mean(calls, "full_tokens")
            ax.plot(
                full.index.to_numpy(),
                full.to_numpy(dtype=float),
                color="#9aa4b2",
                linewidth=1.2,
                linestyle="--",
                label="full history",
            )
            drawn_full = True
    ax.set_xlabel("position in the dialogue (% of its calls)")
    ax.set_ylabel("prompt tokens (mean over dialogues)")
    ax.set_title("Prompt tokens per call")
    ax.set_xlim(0, 100)
    ax.set_ylim(bottom=0)
    if ax.lines:
        _legend_below(ax, len(ax.lines))
    return to_png(fig)


def grouped_bars(
    values: Mapping[str, Mapping[str, float | None]], *, title: str, ylabel: str, percent: bool = True
) -> bytes:
    """Bars per group (x) and series (legend): `values[series][group]`."""
    series = list(values)
    groups = sorted({g for s in values.values() for g in s}, key=_natural)
    fig, ax = plt.subplots(layout="constrained", figsize=(8.6, 3.6))
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
    return to_png(fig)


def latency_boxes(samples: Mapping[str, pd.DataFrame]) -> bytes:
    """Latency distribution of each timed stage, one box per configuration (log scale)."""
    stages = sorted({s for frame in samples.values() for s in frame["stage"].unique()})
    fig, axes = plt.subplots(1, max(1, len(stages)), layout="constrained", figsize=(8.6, 3.4), squeeze=False)
    for ax, stage in zip(axes[0], stages, strict=False):
        labels, data = [], []
        for label, frame in samples.items():
            values = frame.loc[frame["stage"] == stage, "latency_us"].to_numpy(dtype=float)
            if values.size:
                labels.append(label)
                data.append(np.maximum(values, 1.0))
        box = ax.boxplot(data, orientation="horizontal", patch_artist=True, showfliers=False, widths=0.6)
        for i, patch in enumerate(box["boxes"]):
            patch.set_facecolor(color(i))
            patch.set_alpha(0.75)
        ax.set_yticks(range(1, len(labels) + 1), labels, fontsize=8)
        ax.set_xscale("log")
        ax.set_xlabel("µs per call (log)")
        ax.set_title(stage)
    return to_png(fig)


def pareto_plot(
    points: pd.DataFrame, x: str, y: str, front: Sequence[bool], tags: Sequence[str], *, xlabel: str, ylabel: str
) -> bytes:
    """Configurations as points tagged with their row number (x lower is better, y higher) and the Pareto front."""
    fig, ax = plt.subplots(layout="constrained", figsize=(6.4, 4.2))
    xs, ys = points[x].to_numpy(dtype=float), points[y].to_numpy(dtype=float) * 100
    on = np.array(front, dtype=bool)
    ax.scatter(xs[~on], ys[~on], s=46, color="#9aa4b2", zorder=3, label="dominated")
    ax.scatter(xs[on], ys[on], s=60, color=PALETTE[0], zorder=4, label="Pareto front")
    order = np.argsort(xs[on])
    ax.step(xs[on][order], ys[on][order], where="post", color=PALETTE[0], linewidth=1.2, alpha=0.7)
    for tag, px, py in zip(tags, xs, ys, strict=True):
        ax.annotate(str(tag), (px, py), textcoords="offset points", xytext=(5, 5), fontsize=8.5, color="#1d2433")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(f"{ylabel} vs {xlabel}")
    ax.set_xlim(*_fitted(xs, floor=0.0))
    ax.set_ylim(*_fitted(ys, floor=0.0, ceiling=100.0))
    ax.legend(fontsize=8.5, loc="best")
    return to_png(fig)


def _fitted(values: np.ndarray, *, floor: float, ceiling: float | None = None) -> tuple[float, float]:
    """Axis limits around `values` with a margin, so close points stay apart (never below `floor`)."""
    finite = values[np.isfinite(values)]
    if finite.size == 0:
        return floor, ceiling if ceiling is not None else 1.0
    low, high = float(finite.min()), float(finite.max())
    pad = max((high - low) * 0.12, abs(high) * 0.05, 0.5)
    top = high + pad if ceiling is None else min(ceiling + pad / 2, high + pad)
    return max(floor - pad / 2, low - pad), top


def _natural(text: str) -> tuple[int, str]:
    return (int(text), "") if text.isdigit() else (10**9, text)
