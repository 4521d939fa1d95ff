"""The metric registry: every metric real runs compute is registered, and everything derives from it."""

from __future__ import annotations

import dataclasses
import inspect
import json
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
from hand_made import call
from hypothesis import given
from hypothesis import strategies as st
from replays import CONV26_LONGTERM, MISFIRE_DEV, NO_FIGURES, SHARED_RUNS_GROUP, SYNTHETIC_UPDATES

from memlab.metrics import compute_metrics, family, registry, token_metrics
from memlab.metrics.__main__ import main as regenerate
from memlab.metrics.registry import ABS_TOL, REL_TOL, Metric, lookup, spec, unregistered
from memlab.report.comparison import SHORT_NAMES, SUMMARY_METRICS
from memlab.report.gate import compare_metric, rule_for
from memlab.sim.records import CallRecord

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "evaluation.md"
TABLE = re.compile(r"<!-- metric-registry:begin -->\n(.*?)\n<!-- metric-registry:end -->", re.S)
REGENERATE = "python -m memlab.metrics --write docs/evaluation.md"

# Runs that between them make every kind of metric: long-term retrieval and answer scoring on a LoCoMo
# conversation; context, memory and compressor summaries and session forks on the synthetic set; updated facts
# (synthetic) and decoys (datasets/updates/); session-level retrieval on the LongMemEval sample.
RUNS = {
    "locomo": CONV26_LONGTERM,  # this and the update runs: shared with other modules (tests/replays.py)
    "summaries": (
        "dataset.dialogues=1",
        "dataset.sessions=3",
        "context=summarize",
        "memory=summarize",
        "agent_memory=hybrid",
        "+hooks@hooks.summarization=summarization",
        "hooks.summarization.trigger_tokens=1500",
        "+hooks@hooks.sessions=sessions",
        NO_FIGURES,
    ),
    "updates": SYNTHETIC_UPDATES,
    "misfires": MISFIRE_DEV,
    "longmemeval": (
        "dataset=longmemeval",
        "dataset.path=datasets/longmemeval_sample.json",
        "longterm=chat",
        NO_FIGURES,
    ),
}


class RealRuns(Mapping[str, Path]):
    """The run folder of each of `RUNS`, run when a test first reads it (`shared_run` keeps it for the process).

    Lazy so that a test of one run (tests/test_extending.py's copy of the checkout selects one) replays that one.
    """

    def __init__(self, request: pytest.FixtureRequest, shared_run: Callable[..., Any]) -> None:
        self._request, self._shared_run = request, shared_run

    def __getitem__(self, name: str) -> Path:
        if name == "locomo":
            return Path(self._request.getfixturevalue("conv26_longterm_run"))
        return Path(self._shared_run(*RUNS[name]).run_dir)

    def __iter__(self) -> Iterator[str]:
        return iter(RUNS)

    def __len__(self) -> int:
        return len(RUNS)


@pytest.fixture(scope="module")
def real_runs(request: pytest.FixtureRequest, shared_run: Callable[..., Any]) -> RealRuns:
    """`RealRuns` of this module (its tests carry SHARED_RUNS_GROUP, so one worker replays them)."""
    return RealRuns(request, shared_run)


def _metric_names(run_dir: Path) -> list[str]:
    return [*json.loads((run_dir / "metrics.json").read_text()), *json.loads((run_dir / "latency.json").read_text())]


@SHARED_RUNS_GROUP
@pytest.mark.parametrize("run", sorted(RUNS))
def test_every_metric_a_real_run_computes_is_registered(real_runs: RealRuns, run: str) -> None:
    names = _metric_names(real_runs[run])
    assert len(names) > 40
    assert unregistered(names) == [], "register these in memlab/metrics/registry.py"


@SHARED_RUNS_GROUP
def test_the_real_runs_cover_every_section(real_runs: RealRuns) -> None:
    names = [n for run in real_runs.values() for n in _metric_names(run)]
    assert {spec(n).section for n in names} == set(registry.SECTIONS)


@SHARED_RUNS_GROUP
def test_the_manifest_carries_units_and_directions(real_runs: RealRuns) -> None:
    run = real_runs["locomo"]
    manifest = json.loads((run / "manifest.json").read_text())
    definitions = manifest["metric_definitions"]
    assert set(definitions) == set(_metric_names(run))
    assert definitions["tokens.prompt.mean"] == {
        "unit": "tokens",
        "better": "lower",
        "format": "number",
        "description": spec("tokens.prompt.mean").description,
    }
    assert definitions["longterm.recall@10"]["better"] == "higher"


def test_lookup_strips_the_category_and_prefers_exact_names() -> None:
    assert lookup("context.answer_coverage.cat_multi-hop") is lookup("context.answer_coverage")
    assert spec("longterm.recall@20").name == "longterm.recall@*"
    assert spec("longterm.recall@5").name == "longterm.recall@5"  # its own column, beside recall@1 and @10
    assert spec("longterm.recall_any@5").name == "longterm.recall_any@*"
    assert spec("latency.reference_us").better == "none"
    assert spec("latency.context.p95_us").better == "lower"
    assert lookup("no.such.metric") is None
    with pytest.raises(KeyError, match="not registered"):
        spec("no.such.metric")


def test_a_bad_declaration_names_the_metric() -> None:
    with pytest.raises(ValueError, match=r"'x\.y': unit 'litres'"):
        Metric("x.y", "litres", "higher", registry.S_TOKENS, "?")
    with pytest.raises(ValueError, match="section 'Misc'"):
        Metric("x.y", registry.COUNT, "higher", "Misc", "?")


def test_docs_table_is_the_registry() -> None:
    found = TABLE.search(DOC.read_text(encoding="utf-8"))
    assert found, f"{DOC} lacks the metric-registry markers"
    assert found.group(1) == registry.markdown_table(), f"{DOC.name}: the metric table is stale; run: {REGENERATE}"


def test_the_regenerate_command_rewrites_only_the_table(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    doc = tmp_path / "evaluation.md"
    stale = TABLE.sub(
        "<!-- metric-registry:begin -->\n| old |\n<!-- metric-registry:end -->", DOC.read_text(encoding="utf-8")
    )
    doc.write_text(stale, encoding="utf-8")
    regenerate(["--write", str(doc)])
    assert doc.read_text(encoding="utf-8") == DOC.read_text(encoding="utf-8")
    regenerate([])
    assert capsys.readouterr().out == registry.markdown_table() + "\n"
    (tmp_path / "plain.md").write_text("no markers\n", encoding="utf-8")
    with pytest.raises(SystemExit, match=r"plain\.md: the file lacks a <!-- metric-registry:begin --> line"):
        regenerate(["--write", str(tmp_path / "plain.md")])


def test_comparison_columns_and_gate_directions_come_from_the_registry() -> None:
    assert SUMMARY_METRICS[:2] == ("calls", "tokens.prompt.mean")
    assert all(lookup(m) is not None for m in SUMMARY_METRICS)
    assert SHORT_NAMES["longterm.recall@10"] == "recall@10"
    for name in ("tokens.saved_ratio", "cost.usd", "context.evidence_retention", "calls", "answer.f1.locomo"):
        assert rule_for(name).better == spec(name).better
    assert rule_for("latency.context.p50_us").ratio_to == "latency.reference_us"
    assert rule_for("latency.reference_us").skip


def _status(name: str, base: float, cand: float) -> str:
    return compare_metric(rule_for(name), name, {name: base}, {name: cand})[0]


@given(st.floats(min_value=-1e6, max_value=1e6, allow_nan=False), st.sampled_from([-1e-6, 1e-6]))
def test_rounding_noise_never_flips_the_verdict(base: float, noise: float) -> None:
    for name in ("context.evidence_retention", "tokens.prompt.mean", "calls"):
        assert _status(name, base, base + noise) == "ok"


@given(st.floats(min_value=1e-3, max_value=1e6))
def test_a_one_percent_drop_always_fails(base: float) -> None:
    assert _status("context.evidence_retention", base, base * 0.99) == "regression"
    assert _status("tokens.prompt.mean", base, base * 1.01) == "regression"
    assert _status("calls", base, base * 0.99) == "changed"


@given(st.integers(min_value=0, max_value=10**9))
def test_one_token_or_one_count_more_always_fails(total: int) -> None:
    """At 1e-4 relative, +500 tokens on a 5M-token total passed, and +1 token per call on a 16k-token prompt."""
    assert _status("tokens.full_history.total", total, total + 1) == "changed"  # no direction: any change fails
    assert _status("tokens.prompt.mean", total, total + 1) == "regression"
    assert _status("calls", total, total + 1) == "changed"


def test_the_tolerance_is_absolute_plus_relative() -> None:
    base = 100.0
    edge = ABS_TOL + REL_TOL * base
    assert _status("context.evidence_retention", base, base - 0.999 * edge) == "ok"
    assert _status("context.evidence_retention", base, base - 1.001 * edge) == "regression"


def test_every_family_takes_only_run_inputs_or_defaults() -> None:
    """compute_metrics gives a family the `RunInputs` fields its parameters name; any other must have a default."""
    fields = {f.name for f in dataclasses.fields(family.RunInputs)}
    for compute in family.families():
        params = inspect.signature(compute).parameters.values()
        assert [p.name for p in params if p.name not in fields and p.default is p.empty] == [], compute.__name__


def test_a_family_is_all_compute_metrics_needs(monkeypatch: pytest.MonkeyPatch) -> None:
    """A family gets the inputs it names; a metric name two families write is refused, naming both."""

    def tool_turns(calls: Sequence[CallRecord], window: int | None, scale: int = 2) -> dict[str, int]:
        return {"toy.calls": scale * len(calls), "toy.window": window or 0}

    def calls_again(calls: Sequence[CallRecord]) -> dict[str, int]:
        return {"calls": len(calls)}

    calls = [call(10, 10), call(20, 40)]
    monkeypatch.setattr(family, "families", lambda: [tool_turns])
    assert compute_metrics(calls, context_window=7) == {"toy.calls": 4, "toy.window": 7}
    monkeypatch.setattr(family, "families", lambda: [token_metrics, calls_again])
    with pytest.raises(ValueError, match=r"calls_again writes \['calls'\], which memlab.metrics.tokens.token_metrics"):
        compute_metrics(calls)


@SHARED_RUNS_GROUP
def test_every_family_writes_in_a_real_run(real_runs: RealRuns) -> None:
    """A family left unmarked (never called) or one that stopped writing shows here: each of its metrics is missing."""
    written = {registry.spec(n).name for run in real_runs.values() for n in _metric_names(run)}
    declared = {m.name for m in registry.METRICS if not m.name.startswith("latency.")}
    assert declared - written == set()
