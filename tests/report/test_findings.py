"""The comparison's sentences: a column that some configurations fill says why it is empty for the others; the
quality that tells the rows apart decides; what to pick agrees with `memlab recommend`; integrity counts are named.

The sweep checks read real sweeps' comparisons (`memlab run -m ... debug=default`), each run once a module.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from in_process import memlab_main, working_in
from requires import missing

from memlab.report.findings import findings, pareto_front
from memlab.report.recommend import recommend

NAN = float("nan")
# One worker runs the module under `--dist loadgroup`, so each sweep below runs once, not once per worker.
pytestmark = pytest.mark.xdist_group("findings_sweeps")


def _sweep(factory: pytest.TempPathFactory, name: str, *overrides: str) -> Path:
    sweep = factory.mktemp(name) / "sweep"
    with working_in(factory.getbasetemp(), {"CI": "1"}):
        assert memlab_main("run", "-m", "debug=default", *overrides, f"hydra.sweep.dir={sweep}") == 0
    return sweep


def _shows(sweep: Path) -> list[str]:
    """comparison.md's "What this shows" items, each unwrapped to one line."""
    md = (sweep / "comparison.md").read_text(encoding="utf-8")
    section = md[md.index("## What this shows") :].split("\n\n")[1]
    return [" ".join(item.split()) for item in section.removeprefix("- ").split("\n- ")]


@pytest.fixture(scope="module")
def longterm_sweep(tmp_path_factory: pytest.TempPathFactory, locomo_path: Path) -> Path:
    """Long-term memories under `context=none` (experiment=peers_longterm's shape): every row keeps all the evidence;
    memlab's memory injects memories (more than the full history), llama-index Memory does not call memlab's tools."""
    if missing("llama_index.core"):
        pytest.skip("llama_index is not installed: pip install 'memlab[peers]'")
    data = ("dataset=locomo", f"dataset.path={locomo_path}")
    return _sweep(tmp_path_factory, "longterm", *data, "context=none", "longterm=locomo,llamaindex_memory")


def test_a_quality_equal_in_every_row_decides_nothing_and_recall_does(longterm_sweep: Path) -> None:
    """The defect: with evidence kept 100% everywhere, the paragraph ranked by tokens alone and called #0 dominated,
    though recall@10 puts both on its front."""
    table = pd.read_csv(longterm_sweep / "comparison.csv")
    assert table["context.evidence_retention"].tolist() == [1.0, 1.0]
    assert table["pareto.recall@10"].tolist() == [True, True]  # locomo: more recall for more tokens
    assert table["longterm.recall@10"][0] > table["longterm.recall@10"][1]
    said = _shows(longterm_sweep)
    assert said[0] == "evidence kept is 100.0% in every configuration measuring it, so it decides nothing here: " + (
        "recall@10 does."
    )
    assert said[1].startswith("#0 (locomo) has the best recall@10 (")
    assert not [s for s in said if s.startswith("Dominated")]
    assert "tool saves is undefined (—) for #1 (llamaindex_memory): it does not call memlab's memory tools." in said
    md = " ".join((longterm_sweep / "comparison.md").read_text(encoding="utf-8").split())
    assert "Pareto: not dominated in prompt tokens per call (lower is better) against evidence kept or recall@10" in md


def test_what_to_pick_sets_aside_what_recommend_sets_aside(longterm_sweep: Path) -> None:
    """The defect: "What to pick" named configurations costing more than the full history as the best for their
    budget, without a word, where `memlab recommend` sets them aside; now it sets them aside and says so."""
    table = pd.read_csv(longterm_sweep / "comparison.csv")
    assert table["tokens.net_saved_ratio"][0] < 0 <= table["tokens.net_saved_ratio"][1]
    picked = recommend(table, float(table["tokens.prompt.mean"].max()))
    assert picked.best is not None and picked.best["label"] == "longterm=llamaindex_memory"
    pick, aside = [s for s in _shows(longterm_sweep) if s.startswith(("What to pick", "Set aside"))]
    assert pick.startswith("What to pick: #1 (llamaindex_memory) at ") and "#0" not in pick
    assert aside.startswith("Set aside as `memlab recommend` does (each costs more than sending the full history")
    assert f": #0 (locomo) at {table['tokens.prompt.mean'][0]:,.1f} tokens: " in aside and "net saved -" in aside


@pytest.fixture(scope="module")
def orphans_sweep(tmp_path_factory: pytest.TempPathFactory, tau_bench_path: Path) -> Path:
    """tau-bench (tool calls, no probe questions) through a strategy splitting tool-call units and one that does not."""
    if missing("autogen_core"):
        pytest.skip("autogen_core is not installed: pip install 'memlab[peers]'")
    data = ("dataset=tau_bench", f"dataset.path={tau_bench_path}", "budget_counter=exact")
    strategies = ("context=autogen_token_limited,sliding_window", "context.max_tokens=4000")
    return _sweep(tmp_path_factory, "orphans", *data, *strategies)


def test_integrity_counts_that_differ_are_named_and_no_uncomputed_front_is(orphans_sweep: Path) -> None:
    """The defect: experiment=peers_tau_bench's paragraph said nothing of the orphan one strategy made, and the page
    defined a Pareto front against qualities tau-bench does not measure (no pareto column)."""
    table = pd.read_csv(orphans_sweep / "comparison.csv")
    orphans = table["context.tool_orphans"].tolist()
    assert orphans[0] > 0 == orphans[1]
    assert table["context.evidence_retention"].isna().all()
    said = [s for s in _shows(orphans_sweep) if s.startswith("tool orphans counts requests")]
    assert said == [
        "tool orphans counts requests holding a tool result without its call or a call without all its results (a "
        f"provider rejects them): #0 (autogen_token_limited) {orphans[0]}; 0 in every other configuration."
    ]
    md = (orphans_sweep / "comparison.md").read_text(encoding="utf-8")
    assert "pareto" not in md.split("## More metrics")[0] and "Pareto:" not in md


def row(context: str, tokens: float, retention: float, p50: float) -> dict[str, object]:
    return {
        "label": f"context={context}",
        "param.context": context,
        "status": "ok",
        "tokens.prompt.mean": tokens,
        "context.evidence_retention": retention,
        "latency.context.p50_us": p50,
    }


def test_an_empty_cell_says_why() -> None:
    frame = pd.DataFrame([row("none", 900.0, 1.0, NAN), row("trim", 100.0, 0.2, 5.0), row("peer", 300.0, 0.3, 80.0)])
    said = findings(frame)
    assert "context p50 is undefined (—) for #0 (none): it has no context stage." in said
    assert not [s for s in said if "evidence kept is undefined" in s]  # filled everywhere


def test_a_column_empty_for_every_configuration_is_left_out_not_explained() -> None:
    """tau-bench has no probe questions: no retention anywhere, and the comparison shows no such column."""
    frame = pd.DataFrame([row("none", 900.0, NAN, NAN), row("trim", 100.0, NAN, 5.0)])
    assert not [s for s in findings(frame) if "evidence kept" in s]


def ranked(rerank: str, at1: float, at10: float) -> dict[str, object]:
    return {
        "label": f"rerank={rerank}",
        "param.longterm.rerank": rerank,
        "status": "ok",
        "tokens.prompt.mean": 500.0,
        "longterm.recall@1": at1,
        "longterm.recall@10": at10,
    }


def test_a_configuration_that_buys_recall_at_10_with_recall_at_1_is_named() -> None:
    frame = pd.DataFrame([ranked("[decay,dedup]", 0.32, 0.64), ranked("[decay,updates,dedup]", 0.24, 0.67)])
    trade = [s for s in findings(frame) if "buys recall@10 with recall@1" in s]
    assert len(trade) == 1 and trade[0].startswith("#1 ([decay,updates,dedup]) buys recall@10 with recall@1")
    assert "#0 ([decay,dedup])" in trade[0]


def test_no_trade_is_claimed_when_one_configuration_is_better_at_both() -> None:
    frame = pd.DataFrame([ranked("[decay,dedup]", 0.20, 0.60), ranked("[decay,updates,dedup]", 0.24, 0.67)])
    assert not [s for s in findings(frame) if "buys recall@10" in s]


def test_what_to_pick_offers_what_recommend_picks_at_every_budget() -> None:
    """A costly row (net saved below 0) cheaper than every other hid the one recommend picks once that one fits:
    one front of both called #1 dominated, so the advice went from #0 to #2 while recommend --budget 300 picks #1."""
    rows = [("w", 100.0, 0.90, -0.1), ("n", 200.0, 0.80, 0.2), ("m", 400.0, 0.95, 0.1)]
    frame = pd.DataFrame(
        [{**row(name, tokens, kept, 1.0), "tokens.net_saved_ratio": net} for name, tokens, kept, net in rows]
    )
    frame["pareto.evidence_retention"] = pareto_front(frame["tokens.prompt.mean"], frame["context.evidence_retention"])
    advice = next(s for s in findings(frame) if s.startswith("What to pick"))
    for budget in (150, 300, 500):
        picked = recommend(frame, budget).best["label"].split("=", 1)[1]
        assert f"({picked})" in advice, (budget, picked, advice)
