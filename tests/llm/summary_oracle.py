"""Recorded outputs of the offline summarizer as it was before it was made fast: the equivalence oracle.

`python tests/llm/summary_oracle.py` replays the first LoCoMo conversation of locomo_dev7.json with
``context=summarize`` and ``context=composite`` and records every distinct summarizer request
(its sha256, never the transcript itself) with the summary it produced, plus each run's metrics.json,
under ``tests/llm/oracle/``. The recording was made once, from the code before the speed work
(commit a681381); the equivalence test replays the same runs with today's code and compares.
"""

from __future__ import annotations

import contextlib
import gzip
import hashlib
import json
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from hydra import compose, initialize_config_module

from memlab import config
from memlab.experiment import run_experiment
from memlab.llm import extractive

ORACLE = Path(__file__).parent / "oracle"
STRATEGIES = ("summarize", "composite")


def request_key(transcript: str, max_tokens: int, counter: str, personal: bool) -> str:
    """The sha256 of one summarizer request (what `memlab.llm.summarize.summarize` is given)."""
    body = json.dumps([transcript, max_tokens, counter, personal], ensure_ascii=False)
    return hashlib.sha256(body.encode("utf-8")).hexdigest()


@contextlib.contextmanager
def recorded_summaries() -> Iterator[dict[str, str]]:
    """Every summary the extractive model computes while the block runs, by request key."""
    seen: dict[str, str] = {}
    original = extractive.summarize

    def recording(transcript: str, max_tokens: int, counter: str = "cl100k_base", personal: bool = False) -> str:
        text = original(transcript, max_tokens, counter, personal)
        seen[request_key(transcript, max_tokens, counter, personal)] = text
        return text

    extractive.summarize = recording  # type: ignore[assignment]
    try:
        yield seen
    finally:
        extractive.summarize = original  # type: ignore[assignment]


def oracle_overrides(locomo: Path, strategy: str) -> list[str]:
    return [
        "dataset=locomo",
        f"dataset.path={locomo}",
        "dataset.max_dialogues=1",
        f"context={strategy}",
        f"name=oracle-{strategy}",
        "sim.progress=false",
    ]


def replay(locomo: Path, strategy: str, run_dir: Path, *extra: str) -> tuple[dict[str, str], str]:
    """The summaries and metrics.json text of one oracle run with today's code (its run dir stays in `run_dir`)."""
    config.register()
    with initialize_config_module(config_module="memlab.conf", version_base=None):
        cfg = compose(config_name="config", overrides=[*oracle_overrides(locomo, strategy), *extra])
    extractive.SUMMARY_MEMO.clear()  # so that every distinct request is computed, and recorded, again
    with recorded_summaries() as seen:
        result = run_experiment(cfg, run_dir)
    return seen, (result.run_dir / "metrics.json").read_text(encoding="utf-8")


def load(strategy: str) -> tuple[dict[str, str], str]:
    """The recorded summaries and metrics.json text of `strategy`."""
    with gzip.open(ORACLE / f"{strategy}.summaries.json.gz", "rt", encoding="utf-8") as f:
        summaries: dict[str, str] = json.load(f)
    return summaries, (ORACLE / f"{strategy}.metrics.json").read_text(encoding="utf-8")


def record(locomo: Path) -> None:
    ORACLE.mkdir(exist_ok=True)
    for strategy in STRATEGIES:
        with tempfile.TemporaryDirectory() as tmp:
            seen, metrics = replay(locomo, strategy, Path(tmp) / "run")
        body: Any = dict(sorted(seen.items()))
        with gzip.GzipFile(ORACLE / f"{strategy}.summaries.json.gz", "wb", mtime=0) as f:
            f.write(json.dumps(body, ensure_ascii=False, indent=0).encode("utf-8"))
        (ORACLE / f"{strategy}.metrics.json").write_text(metrics, encoding="utf-8")
        print(f"{strategy}: {len(seen)} distinct summaries", file=sys.stderr)


if __name__ == "__main__":
    import os

    root = Path(__file__).resolve().parents[2]
    shared = Path(os.environ.get("MEMLAB_SHARED", root.parent / "shared"))
    record(shared / "datasets" / "locomo" / "locomo_dev7.json")
