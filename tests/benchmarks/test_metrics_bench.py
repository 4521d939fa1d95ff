"""The metrics' hot paths on a whole corpus: every metric of a LoCoMo replay, retention rows, reports.

Each runs once as a test by default; `make bench` times them (--benchmark-enable) and keeps the JSON.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from memlab.dialogues import load_locomo
from memlab.memory import InMemoryChatMemory
from memlab.metrics import compute_metrics, probe_rows
from memlab.metrics import metric_words as content_words
from memlab.metrics.retention import _part_words, _word_set
from memlab.report import RunData, run_report_html
from memlab.report.comparison import comparison_table, pareto_front
from memlab.runtime import Runtime, SecurityContext
from memlab.sim import ProbeRecord, Record, simulate
from memlab.tokens import get_counter


def cold(fn, records):  # type: ignore[no-untyped-def]
    """Call `fn` with the context word caches emptied, as a fresh run would."""
    _word_set.cache_clear()
    _part_words.cache_clear()
    return fn(records)


@pytest.fixture(scope="module")
def locomo_records(locomo_path: Path) -> list[Record]:
    """Every record of a replay of locomo_dev7.json without a strategy (7 dialogues, 1,347 probes)."""
    counter = get_counter("cl100k_base")

    def make_runtime(d):  # type: ignore[no-untyped-def]
        return Runtime(history=InMemoryChatMemory(d.id), counter=counter, security=SecurityContext(user_id=d.user_id))

    return list(simulate(load_locomo(locomo_path), make_runtime))


def test_compute_metrics_on_locomo(benchmark, locomo_records: list[Record]) -> None:
    metrics = benchmark(lambda: cold(compute_metrics, locomo_records))
    assert metrics["context.evidence_retention"] == 1.0  # nothing dropped without a strategy
    assert metrics["tokens.saved_ratio"] == 0.0


def test_probe_rows_on_locomo(benchmark, locomo_records: list[Record]) -> None:
    rows = benchmark(lambda: cold(probe_rows, locomo_records))
    assert len(rows) == sum(isinstance(r, ProbeRecord) for r in locomo_records) == 1347


def test_content_words_of_a_long_context(benchmark, locomo_records: list[Record]) -> None:
    context = next(r for r in reversed(locomo_records) if isinstance(r, ProbeRecord)).context_text
    words = benchmark(content_words, context)
    assert len(words) > 5000


def test_run_report_html(benchmark, locomo_records: list[Record], tmp_path: Path) -> None:
    run = RunData.from_records(tmp_path, locomo_records)
    page = benchmark(run_report_html, run)
    assert page.count("data:image/png;base64,") >= 2


def test_comparison_of_a_large_sweep(benchmark) -> None:
    runs = [
        RunData(
            Path(str(i)),
            metrics={
                "tokens.prompt.mean": 100.0 + (i * 37) % 500,
                "context.evidence_retention": ((i * 53) % 100) / 100,
            },
            manifest={"overrides": [f"context.max_tokens={i}"]},
        )
        for i in range(200)
    ]
    frame = benchmark(comparison_table, runs)
    assert len(frame) == 200
    assert frame["pareto.evidence_retention"].tolist() == pareto_front(
        frame["tokens.prompt.mean"].tolist(), frame["context.evidence_retention"].tolist()
    )
