"""Recorded outputs of the offline summarizer, made by the slow reference: the equivalence oracle.

`python tests/llm/summary_oracle.py` replays the first LoCoMo conversation of locomo_dev7.json with
``context=summarize`` and ``context=composite`` under the default configuration (its tokenizer and
pricing model), with every summary computed by the slow reference (tests/llm/reference_summarize.py,
which takes sentences and terms from the same `memlab.text` functions as production), and records
every distinct summarizer request (its sha256, never the transcript itself) with the summary it
produced, under ``tests/llm/oracle/``. Re-record when `memlab.text` or the reference changes what a
summary is (last: sentences through pysbd). The equivalence test replays the same runs with today's
fast code and compares every summary, and compares metrics.json with a replay whose summaries are
looked up in the recording (`recorded_model`), so that metric changes made since by design do not
need a new recording.
"""

from __future__ import annotations

import contextlib
import gzip
import hashlib
import json
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import reference_summarize
from hydra import compose, initialize_config_module

from memlab import config
from memlab.experiment import run_experiment
from memlab.llm import extractive

ORACLE = Path(__file__).parent / "oracle"
STRATEGIES = ("summarize", "composite")


def request_key(transcript: str, max_tokens: int, counter: str, personal: bool) -> str:
    """The sha256 of one summarizer request (what `memlab.llm.summarize.extractive_summary` is given)."""
    body = json.dumps([transcript, max_tokens, counter, personal], ensure_ascii=False)
    return hashlib.sha256(body.encode("utf-8")).hexdigest()


@contextlib.contextmanager
def recorded_summaries() -> Iterator[dict[str, str]]:
    """Every summary the extractive model computes while the block runs, by request key."""
    seen: dict[str, str] = {}
    original = extractive.extractive_summary

    def recording(transcript: str, max_tokens: int, counter: str = "cl100k_base", personal: bool = False) -> str:
        text = original(transcript, max_tokens, counter, personal)
        seen[request_key(transcript, max_tokens, counter, personal)] = text
        return text

    extractive.extractive_summary = recording  # type: ignore[assignment]
    try:
        yield seen
    finally:
        extractive.extractive_summary = original  # type: ignore[assignment]


@contextlib.contextmanager
def recorded_model(strategy: str) -> Iterator[None]:
    """The extractive model answers every summary request from the recording (KeyError if it has none)."""
    recorded = load(strategy)
    original = extractive.extractive_summary

    def lookup(transcript: str, max_tokens: int, counter: str = "cl100k_base", personal: bool = False) -> str:
        return recorded[request_key(transcript, max_tokens, counter, personal)]

    extractive.extractive_summary = lookup  # type: ignore[assignment]
    try:
        yield
    finally:
        extractive.extractive_summary = original  # type: ignore[assignment]


def oracle_overrides(locomo: Path, strategy: str) -> list[str]:
    return [
        "dataset=locomo",
        f"dataset.path={locomo}",
        "dataset.max_dialogues=1",
        f"context={strategy}",
        f"name=oracle-{strategy}",
        "sim.progress=false",
    ]


@dataclass(frozen=True)
class OracleRun:
    """What one oracle replay made: summaries by request key, metrics.json, the summary memo's counts."""

    summaries: dict[str, str]
    metrics: str
    memo_hits: int
    memo_misses: int
    run_dir: Path


def replay(locomo: Path, strategy: str, run_dir: Path, *extra: str, recorded: bool = False) -> OracleRun:
    """The summaries made (by request key) and the metrics.json text of one oracle run, kept in `run_dir`.

    With `recorded`, the summaries come from the recording instead of the summarizer.
    """
    config.register()
    with initialize_config_module(config_module="memlab.conf", version_base=None):
        cfg = compose(config_name="config", overrides=[*oracle_overrides(locomo, strategy), *extra])
    extractive.SUMMARY_MEMO.clear()  # so that every distinct request is computed, and recorded, again
    with contextlib.ExitStack() as stack:
        if recorded:
            stack.enter_context(recorded_model(strategy))
        seen = stack.enter_context(recorded_summaries())
        result = run_experiment(cfg, run_dir)
    memo = extractive.SUMMARY_MEMO
    run = OracleRun(seen, (result.run_dir / "metrics.json").read_text("utf-8"), memo.hits, memo.misses, result.run_dir)
    memo.clear()  # no recorded summary outlives the block
    return run


def load(strategy: str) -> dict[str, str]:
    """The recorded summaries of `strategy` by request key."""
    with gzip.open(ORACLE / f"{strategy}.summaries.json.gz", "rt", encoding="utf-8") as f:
        summaries: dict[str, str] = json.load(f)
    return summaries


@contextlib.contextmanager
def reference_model() -> Iterator[None]:
    """The extractive model summarizes with the slow reference while the block runs."""
    original = extractive.extractive_summary
    extractive.extractive_summary = reference_summarize.summarize  # type: ignore[assignment]
    try:
        yield
    finally:
        extractive.extractive_summary = original  # type: ignore[assignment]


def record(locomo: Path) -> None:
    """Record every summary of each oracle replay, as the slow reference makes it."""
    ORACLE.mkdir(exist_ok=True)
    for strategy in STRATEGIES:
        with tempfile.TemporaryDirectory() as tmp, reference_model():
            seen = replay(locomo, strategy, Path(tmp) / "run", "sim.workers=1").summaries
        body: Any = dict(sorted(seen.items()))
        with gzip.GzipFile(ORACLE / f"{strategy}.summaries.json.gz", "wb", mtime=0) as f:
            f.write(json.dumps(body, ensure_ascii=False, indent=0).encode("utf-8"))
        print(f"{strategy}: {len(seen)} distinct summaries", file=sys.stderr)


if __name__ == "__main__":
    import os

    root = Path(__file__).resolve().parents[2]
    shared = Path(os.environ.get("MEMLAB_SHARED", root.parent / "shared"))
    record(shared / "datasets" / "locomo" / "locomo_dev7.json")
