"""CPU seconds of the summarizer alone on the requests a replay sends, checked against the recorded summaries.

python experiments/summarizer_time.py record REQUESTS.pkl   # replay conv-26, conv-30, conv-41, conv-42 (summarize)
python experiments/summarizer_time.py time REQUESTS.pkl     # in a fresh process: conv-26's requests as the warm-up,
                                                            # then the others timed (time.process_time)

``record`` keeps every distinct request that ``context=summarize`` sends on each conversation (one process,
``sim.workers=1``, the summary memo cleared per conversation) with its summary. ``time`` prints the CPU seconds
of the timed requests and how many summaries differ from the recording. To compare two versions, record once
and run ``time`` with each on ``PYTHONPATH`` (a ``git archive`` of it, from a folder outside the checkout), in
turns: docs/speed.md, issue 29.
"""

from __future__ import annotations

import argparse
import os
import pickle
import tempfile
import time
from pathlib import Path

SHARED = Path(os.environ.get("MEMLAB_SHARED", Path(__file__).resolve().parents[2] / "shared"))
LOCOMO = SHARED / "datasets" / "locomo" / "locomo_dev7.json"
WARM_UP = "conv-26"
TIMED = ("conv-30", "conv-41", "conv-42")
Request = tuple[str, int, str, bool, str]  # transcript, max_tokens, counter, personal, summary


def record(out: Path) -> None:
    """Every distinct summarizer request of a `context=summarize` replay per conversation, with its summary."""
    from memlab.api import compose
    from memlab.experiment import run_experiment
    from memlab.llm import extractive

    original = extractive.extractive_summary
    requests: dict[str, list[Request]] = {}
    for conversation in (WARM_UP, *TIMED):
        seen = requests[conversation] = []

        def recording(transcript: str, max_tokens: int, counter: str = "cl100k_base", personal: bool = False) -> str:
            summary = original(transcript, max_tokens, counter, personal)
            seen.append((transcript, max_tokens, counter, personal, summary))  # noqa: B023 (called in this turn)
            return summary

        extractive.extractive_summary = recording  # type: ignore[assignment]
        cfg = compose(
            [
                "dataset=locomo",
                f"dataset.path={LOCOMO}",
                f"dataset.sample_ids=[{conversation}]",
                "context=summarize",
                "sim.workers=1",
                "sim.progress=false",
            ]
        )
        extractive.SUMMARY_MEMO.clear()
        with tempfile.TemporaryDirectory() as tmp:
            run_experiment(cfg, Path(tmp) / "run")
        print(f"{conversation}: {len(seen)} requests")
    extractive.extractive_summary = original  # type: ignore[assignment]
    out.write_bytes(pickle.dumps(requests))


def timed(path: Path) -> None:
    """The warm-up's requests, then the timed ones: their CPU seconds and how many summaries differ."""
    from memlab.llm.summarize import extractive_summary

    requests: dict[str, list[Request]] = pickle.loads(path.read_bytes())
    for transcript, max_tokens, counter, personal, _ in requests[WARM_UP]:
        extractive_summary(transcript, max_tokens, counter, personal)
    cpu, differ, count = 0.0, 0, 0
    for conversation in TIMED:
        start = time.process_time()
        made = [extractive_summary(t, m, c, p) for t, m, c, p, _ in requests[conversation]]
        cpu += time.process_time() - start
        differ += sum(m != r[4] for m, r in zip(made, requests[conversation], strict=True))
        count += len(made)
    print(f"{cpu:.3f} CPU s, {count} requests, {differ} summaries differ from the recording")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("command", choices=("record", "time"))
    parser.add_argument("requests", type=Path)
    args = parser.parse_args()
    if args.command == "record":
        record(args.requests)
    else:
        timed(args.requests)


if __name__ == "__main__":
    main()
