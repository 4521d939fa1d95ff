"""The update metrics (`longterm.newer@1`, `older@1`, `newer_missed@10`, the decoy pair) on hand-made
rankings and on real runs of the hand-written sets and the synthetic generator, recounted independently."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from replays import MISFIRE_DEV, SHARED_RUNS_GROUP, SYNTHETIC_UPDATES

from memlab.dialogues import Probe
from memlab.dialogues.model import DECOYS_KEY, SUPERSEDED_KEY
from memlab.experiment import run_experiment
from memlab.metrics.longterm import EVIDENCE_KEY, decoy_metrics, newer_first_metrics, update_rank_metrics
from memlab.sim import ProbeRecord

UPDATES = ("dataset=locomo", "dataset.path=datasets/updates/dev.json", "longterm=locomo")


def record(evidence: str, retrieved: Sequence[Sequence[str]], **metadata: tuple[str, ...]) -> Any:
    probe = Probe("p", "q?", "a", (evidence,), "single-hop", dict(metadata))
    return SimpleNamespace(probe=probe, results={EVIDENCE_KEY: [list(m) for m in retrieved]})


def test_rank_one_counts_every_updated_fact_and_a_memory_citing_both_counts_twice() -> None:
    probes = [
        record("new", [["new"], ["old"]], superseded=("old",)),  # newer at 1
        record("new", [["old", "new"]], superseded=("old",)),  # one memory cites both: newer and older at 1
        record("new", [["x"], ["old"]], superseded=("mid", "old")),  # a superseded one first, the newer missed
        record("new", [["x"]] * 10 + [["new"]], superseded=("old",)),  # the newer at rank 11
        record("new", [["x"]], superseded=("old",)),  # neither retrieved: counted here, not in newer_first
        record("new", [["new"]]),  # no superseded list: not an updated fact
    ]
    assert update_rank_metrics(probes) == {
        "longterm.update_probes": 5,
        "longterm.newer@1": 2 / 5,
        "longterm.older@1": 1 / 5,
        "longterm.newer_missed@10": 3 / 5,
    }
    assert newer_first_metrics(probes) == {"longterm.newer_first": 2 / 4, "longterm.newer_first.probes": 4}
    assert update_rank_metrics(probes[-1:]) == {}


def test_a_decoy_is_above_only_when_it_ranks_strictly_before_the_answer() -> None:
    probes = [
        record("ans", [["later"], ["ans"]], decoys=("later",)),  # above
        record("ans", [["ans", "later"]], decoys=("later",)),  # tie: not above, answer at 1
        record("ans", [["x"], ["later"]], decoys=("later",)),  # only the decoy retrieved: above
        record("ans", [["x"]], decoys=("later",)),  # neither: not above
    ]
    assert decoy_metrics(probes) == {
        "longterm.decoy_probes": 4,
        "longterm.decoy_above": 2 / 4,
        "longterm.decoy_answer@1": 1 / 4,
    }


def recount(records: list[Any], key: str) -> dict[str, tuple[int, int]]:
    """(hits, questions) per outcome, from the ranked evidence lists directly."""
    counts = {"newer@1": 0, "older@1": 0, "missed": 0, "decoy_above": 0, "answer_at_1": 0}
    asked = 0
    for r in records:
        if not isinstance(r, ProbeRecord) or not r.probe.metadata.get(key):  # synthetic: () unless updated
            continue
        asked += 1
        (target,) = r.probe.evidence
        other = r.probe.metadata[key]
        ranked = r.results[EVIDENCE_KEY]
        target_ranks = [i for i, cited in enumerate(ranked) if target in cited]
        other_ranks = [i for i, cited in enumerate(ranked) if any(t in cited for t in other)]
        counts["newer@1"] += target in ranked[0]
        counts["answer_at_1"] += target in ranked[0]
        counts["older@1"] += any(t in ranked[0] for t in other)
        counts["missed"] += target not in {t for cited in ranked[:10] for t in cited}
        counts["decoy_above"] += bool(other_ranks) and (not target_ranks or other_ranks[0] < target_ranks[0])
    return {name: (hits, asked) for name, hits in counts.items()}


@pytest.fixture(scope="module")
def runs(
    tmp_path_factory: pytest.TempPathFactory, compose_config: Callable[..., Any], shared_run: Callable[..., Any]
) -> dict[str, Any]:
    """upd-02 of datasets/updates/dev.json, and the decoy and synthetic runs the registry's tests share."""
    updates = run_experiment(compose_config(*UPDATES, "dataset.sample_ids=[upd-02]"), tmp_path_factory.mktemp("upd"))
    return {"updates": updates, "misfires": shared_run(*MISFIRE_DEV), "synthetic": shared_run(*SYNTHETIC_UPDATES)}


def written(result: Any) -> dict[str, float]:
    return json.loads(Path(result.run_dir, "metrics.json").read_text(encoding="utf-8"))


@SHARED_RUNS_GROUP
@pytest.mark.parametrize("name", ["updates", "synthetic"])
def test_update_metrics_of_a_run_match_an_independent_count(runs: dict[str, Any], name: str) -> None:
    m, counts = written(runs[name]), recount(runs[name].records, SUPERSEDED_KEY)
    asked = counts["newer@1"][1]
    assert asked > 0 and m["longterm.update_probes"] == asked
    # counts are written as integers, as every other count (they were 5.0, 150.0)
    counts_written = [k for k in m if k.startswith(("longterm.questions", "longterm.newer_first.probes"))]
    assert {k: type(m[k]) for k in [*counts_written, "longterm.update_probes"]} == dict.fromkeys(
        [*counts_written, "longterm.update_probes"], int
    )
    assert "longterm.newer_first.probes" in counts_written and "longterm.questions" in counts_written
    for metric, outcome in (("newer@1", "newer@1"), ("older@1", "older@1"), ("newer_missed@10", "missed")):
        assert m[f"longterm.{metric}"] == round(counts[outcome][0] / asked, 6), metric
    if name == "updates":  # the hand-written conversation: the current rules neither always win nor always lose
        assert 0 < m["longterm.newer@1"] < 1 and 0 < m["longterm.newer_missed@10"] < 1


@SHARED_RUNS_GROUP
def test_decoy_metrics_of_a_run_match_an_independent_count(runs: dict[str, Any]) -> None:
    m, counts = written(runs["misfires"]), recount(runs["misfires"].records, DECOYS_KEY)
    asked = counts["answer_at_1"][1]
    assert asked == 24 and m["longterm.decoy_probes"] == asked and type(m["longterm.decoy_probes"]) is int
    assert m["longterm.decoy_above"] == round(counts["decoy_above"][0] / asked, 6)
    assert m["longterm.decoy_answer@1"] == round(counts["answer_at_1"][0] / asked, 6)
    assert 0 < m["longterm.decoy_above"] < 1
    assert "longterm.update_probes" not in m and "longterm.decoy_probes" not in written(runs["updates"])
