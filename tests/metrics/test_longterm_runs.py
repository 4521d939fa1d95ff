"""Long-term memory's background extraction and latency split, measured on real runs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from memlab.experiment import run_experiment
from memlab.metrics import compute_latency, latency_metrics
from memlab.trace import LLM_CALL, LONGTERM_EXTRACT, LONGTERM_RETRIEVE

LONGTERM = ("dataset.dialogues=1", "dataset.sessions=3", "longterm=chat")
COUNTED = ("llm.calls", "llm.failures", "tokens.aux.prompt", "tokens.aux.completion", "longterm.memories")


# The two tests that read the awaited run share it (built once per worker that runs either: one group).
AWAITED_GROUP = pytest.mark.xdist_group("longterm_awaited_run")


def run(make_config: Any, tmp_path: Path, name: str, *overrides: str) -> Any:
    return run_experiment(make_config(*LONGTERM, *overrides), tmp_path / name)


@pytest.fixture(scope="module")
def awaited_run(compose_config: Any, tmp_path_factory: pytest.TempPathFactory) -> Any:
    """The run with the extraction awaited (the default), which both tests below only read."""
    return run_experiment(compose_config(*LONGTERM), tmp_path_factory.mktemp("awaited"))


@AWAITED_GROUP
def test_background_extraction_is_counted_like_the_awaited_one(
    make_config: Any, tmp_path: Path, awaited_run: Any
) -> None:
    awaited = awaited_run.metrics
    background = run(make_config, tmp_path, "background", "longterm.background=true").metrics
    assert awaited["llm.calls"] > 0 and awaited["longterm.memories"] > 0 and awaited["tokens.aux.total"] > 0
    assert {k: background[k] for k in COUNTED} == {k: awaited[k] for k in COUNTED}


def test_background_extraction_failures_are_counted(make_config: Any, tmp_path: Path) -> None:
    faulty = ("llm=faulty", "llm.rate=1.0", "llm.modes=[error]", "longterm.background=true")
    result = run(make_config, tmp_path, "faulty", *faulty)
    events = [e for r in result.records for e in r.events]
    failed_calls = [e for e in events if e.kind == LLM_CALL and e.data["failed"]]
    failed_extractions = [e for e in events if e.kind == LONGTERM_EXTRACT and e.data["failed"]]
    assert failed_calls and failed_extractions
    m = result.metrics
    assert m["llm.failures"] == len(failed_calls) == m["llm.calls"]
    assert m["longterm.extract.failures"] == len(failed_extractions) and m["longterm.memories"] == 0


@AWAITED_GROUP
def test_retrieval_and_extraction_latency_are_split(awaited_run: Any) -> None:
    result = awaited_run
    events = [e.data for r in result.records for e in r.events]
    retrieve = [e for e in events if "query_us" in e]
    extract = [e for e in events if "model_us" in e]
    assert retrieve and extract
    for e in retrieve:  # the parts are inside the whole (the rest: access bookkeeping)
        assert e["query_us"] + (e["index_build_us"] or 0) <= e["latency_us"]
    for e in extract:
        assert e["model_us"] + e["store_us"] <= e["latency_us"]
    builds = [e["index_build_us"] for e in retrieve if e["index_build_us"] is not None]
    assert 0 < len(builds) < len(retrieve)  # an index is rebuilt only when its memories changed
    lat = compute_latency(result.records)
    kinds = {e.kind for r in result.records for e in r.events}
    assert {LONGTERM_RETRIEVE, LONGTERM_EXTRACT} <= kinds
    for name, values in (
        ("retrieval.query", [e["query_us"] for e in retrieve]),
        ("retrieval.index_build", builds),
        ("extract.model", [e["model_us"] for e in extract]),
        ("extract.store", [e["store_us"] for e in extract]),
    ):
        assert lat[f"latency.{name}_p50_us"] == pytest.approx(float(np.percentile(values, 50))), name
        assert lat[f"latency.{name}_p95_us"] == pytest.approx(float(np.percentile(values, 95))), name


def test_latency_parts_on_a_hand_case() -> None:
    m = latency_metrics({"retrieval": [10, 30], "retrieval.query": [2, 4, 6], "extract.store": [100]})
    assert m["latency.retrieval.p50_us"] == 20.0 and m["latency.retrieval.query_p50_us"] == 4.0
    assert m["latency.retrieval.query_p95_us"] == pytest.approx(5.8)  # 4 + 0.9 * (6 - 4)
    assert m["latency.extract.store_p50_us"] == m["latency.extract.store_p95_us"] == 100.0
    assert m["latency.retrieval.index_build_p50_us"] is None and m["latency.extract.model_p95_us"] is None


def test_the_report_counts_what_the_per_user_cap_archived(make_config: Any, tmp_path: Path) -> None:
    """`longterm=chat` keeps the document's cap; the run says how many memories it archived."""
    keep = "longterm.supersede_similarity=null"  # only the cap archives (no supersession, no cleanup in 3 sessions)
    uncapped = run(make_config, tmp_path, "uncapped", keep).metrics
    saved = uncapped["longterm.memories"] + uncapped["longterm.tool.saves"]  # both channels count toward the cap
    cap = int(saved) // 3
    capped = run(make_config, tmp_path, "capped", keep, f"longterm.max_items={cap}").metrics
    assert uncapped["longterm.archived.max_items"] == 0
    # One user: everything saved beyond the cap is archived by it.
    assert capped["longterm.memories"] + capped["longterm.tool.saves"] == saved
    assert capped["longterm.archived.max_items"] == saved - cap > 0
