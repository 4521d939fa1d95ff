"""The peers comparison (17 configurations on a LoCoMo slice) reads at a glance: in Chromium, in its figures, in text.

One real sweep (`experiment=peers` on one conversation's first two sessions) feeds every check: the Pareto
plot's tags do not overlap (boxes measured on the very figure the page embeds), the page renders in headless
Chromium, comparison.md's tables fit a terminal and end with what to pick, and each run report is titled by
its configuration.
"""

from __future__ import annotations

import base64
import itertools
import re
from pathlib import Path

import pandas as pd
import pytest
from chromium import assert_rendered, screenshot
from in_process import memlab_main, working_in

from memlab.report import load_run, plots
from memlab.report.comparison import comparison_table, pareto_figures

CONFIGURATIONS = 17
# One worker runs the module under `--dist loadgroup`, so the sweep below runs once, not once per worker.
pytestmark = pytest.mark.xdist_group("peers_readability")


@pytest.fixture(scope="module")
def peers_sweep(tmp_path_factory: pytest.TempPathFactory, locomo_path: Path) -> Path:
    pytest.importorskip("llama_index.core", reason="the peers extra: pip install 'memlab[peers]'")
    sweep = tmp_path_factory.mktemp("peers") / "sweep"
    env = {"CI": "1", "MEMLAB_SHARED": str(locomo_path.parents[2])}
    args = ["run", "experiment=peers", "sim.max_dialogues=1", "sim.max_sessions=2", "sim.workers=1"]
    with working_in(tmp_path_factory.getbasetemp(), env):  # in this process: its stderr is in the captured output
        assert memlab_main(*args, f"hydra.sweep.dir={sweep}") == 0
    return sweep


def _runs(sweep: Path) -> list:
    jobs = sorted(
        (p for p in sweep.iterdir() if (p / "manifest.json").is_file()), key=lambda p: int(p.name.split("_")[0])
    )
    return [load_run(p) for p in jobs]


def test_every_pareto_tag_is_readable_on_the_figure_the_page_embeds(peers_sweep: Path, tmp_path: Path) -> None:
    runs = _runs(peers_sweep)
    assert len(runs) == CONFIGURATIONS
    page = (peers_sweep / "comparison.html").read_text(encoding="utf-8")
    embedded = re.findall(r'src="data:image/png;base64,([^"]+)"', page)
    figures = pareto_figures(comparison_table(runs))
    assert figures, "no Pareto plot"
    for fig, _ in figures:
        fig.canvas.draw()
        (ax,) = fig.axes
        boxes = [t.get_window_extent() for t in ax.texts]
        tagged = sorted(int(n) for t in ax.texts for n in _numbers(t.get_text()))
        assert tagged == list(range(CONFIGURATIONS)), "every row's number is on the plot once"
        for a, b in itertools.combinations(boxes, 2):
            assert not a.overlaps(b), f"tags overlap: {a} {b}"
        frame = ax.get_window_extent()
        assert all(frame.x0 <= b.x0 and b.x1 <= frame.x1 for b in boxes), "a tag leaves the plot"
        assert base64.b64encode(plots.to_png(fig)).decode("ascii") in embedded, "the page shows this figure"
    assert_rendered(screenshot(peers_sweep / "comparison.html", tmp_path / "comparison.png"))


def _numbers(tag: str) -> list[int]:
    """Row numbers of a tag such as "0, 11, 13-16"."""
    out: list[int] = []
    for part in tag.split(", "):
        low, _, high = part.partition("-")
        out += range(int(low), int(high or low) + 1)
    return out


def test_comparison_md_fits_a_terminal_names_the_entries_and_says_what_to_pick(peers_sweep: Path) -> None:
    md = (peers_sweep / "comparison.md").read_text(encoding="utf-8")
    tables = [line for line in md.splitlines() if line.startswith("|")]
    prose = [line for line in md.splitlines() if not line.startswith("|")]
    assert max(map(len, tables)) <= 170 and max(map(len, prose)) <= 120
    header = tables[0]
    assert "| peers " in header and "experiment/peers" not in header
    assert "prompt tokens" in header and "tokens.prompt.mean" not in header  # the registry's short titles
    advice = " ".join(md[md.index("- What to pick") :].split("##")[0].split())
    pick, aside = advice.split("- Set aside as `memlab recommend`")
    assert "#0 (none)" in pick, "the full history is the pick for an unlimited budget"
    # summarize's summarizer reads more than it saves: recommend sets it aside, and so does the advice, saying so
    assert "(summarize)" not in pick and aside.startswith(" does (each costs more than sending the full history")
    table = pd.read_csv(peers_sweep / "comparison.csv")
    summarize = table[table["param.experiment/peers"] == "summarize"]
    assert f"#{summarize.index[0]} (summarize)" in aside and (summarize["tokens.net_saved_ratio"] < 0).all()


def test_each_run_report_is_titled_by_its_configuration_with_human_headers(peers_sweep: Path) -> None:
    runs = {r.manifest["overrides"][0].rsplit("=", 1)[1]: r for r in _runs(peers_sweep)}
    window = (runs["sliding_window_1000"].path / "report.md").read_text(encoding="utf-8")
    assert window.startswith("# memlab run: peers: sliding_window_1000\n")
    rows = [line for line in window.splitlines() if re.match(r"\| [a-z]+\.\S+ +\| +(0|0\.0%|—|\$0) *\|$", line)]
    assert rows == [], "metrics at zero or undefined are folded, not listed"
    folded = " ".join(window[window.index("## Summaries") :].split("\n\n")[1].split())
    assert folded.startswith("Zero or undefined in this run: zero: ") and "summary.count" in folded  # one paragraph
    html = (runs["sliding_window_1000"].path / "report.html").read_text(encoding="utf-8")
    assert "<title>memlab run: peers: sliding_window_1000</title>" in html
    assert "evidence in summaries" not in html.split("<h2>")[0], "no summary card for a strategy that writes none"
    summarize = (runs["summarize"].path / "report.html").read_text(encoding="utf-8")
    assert "evidence in summaries" in summarize.split("<h2>")[0]
    for heading in ("## Per question category", "## Questions whose evidence was lost most"):
        header = window[window.index(heading) :].split("\n")[2]
        assert header.startswith("|") and "evidence kept" in header and "context." not in header, header


def test_forty_series_look_different() -> None:
    styles = {(s["color"], str(s["linestyle"]), s["marker"]) for s in map(plots.line_style, range(40))}
    assert len(styles) == 40
