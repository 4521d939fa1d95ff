"""Fingerprint every prefix summary of the dev sets, to show that a summarizer change keeps every byte.

python experiments/summary_identity.py OUT.json [--compare OTHER.json]

For each dialogue of locomo_dev7.json and of the tau-bench dev set, the transcript of every prefix of its
messages (cut at 50,000 characters, as SUMMARIZE sends it; repeats dropped) is summarized in turn, as a
replay sends them (each request extends the previous one's corpus), with the default budget and counter,
as a context summary and as a memory summary. OUT.json holds the sha256 of each dialogue's summaries
(in order) and their count. Run it once with the code before a change (``PYTHONPATH`` at a ``git archive``
of it) and once after, then ``--compare``: any dialogue whose summaries differ is listed, and the exit
status is 1. The recorded oracle is checked by tests/llm/test_summary_equivalence.py.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import time
from pathlib import Path

from memlab.dialogues import load_locomo, load_tau_bench
from memlab.llm.base import DEFAULT_SUMMARY_TOKENS
from memlab.llm.prompts import render_transcript
from memlab.llm.summarize import extractive_summary
from memlab.summary import MAX_CONVERSATION_CHARS

SHARED = Path(os.environ.get("MEMLAB_SHARED", Path(__file__).resolve().parents[2] / "shared"))
SETS = {
    "locomo_dev7": lambda: load_locomo(SHARED / "datasets" / "locomo" / "locomo_dev7.json"),
    "tau_bench_dev150": lambda: load_tau_bench(SHARED / "datasets" / "tau_bench" / "airline_gpt4o_dev150.json"),
}
COUNTER = "cl100k_base"


def fingerprints() -> dict[str, dict[str, object]]:
    """Per data set, dialogue and summary kind: the sha256 of its prefix summaries, in order, and their count."""
    out: dict[str, dict[str, object]] = {}
    for name, load in SETS.items():
        for dialogue in load():
            messages = list(dialogue.messages())
            prefixes = (render_transcript(messages[:k])[:MAX_CONVERSATION_CHARS] for k in range(1, len(messages) + 1))
            transcripts = list(dict.fromkeys(prefixes))
            for personal in (False, True):
                digest = hashlib.sha256()
                for transcript in transcripts:
                    digest.update(extractive_summary(transcript, DEFAULT_SUMMARY_TOKENS, COUNTER, personal).encode())
                    digest.update(b"\0")
                key = f"{name}/{dialogue.id}/{'memory' if personal else 'context'}"
                out[key] = {"summaries": len(transcripts), "sha256": digest.hexdigest()}
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--compare", type=Path, help="fingerprints written by another version")
    args = parser.parse_args()
    if args.compare is not None and not args.compare.is_file():  # before the summaries, not after them
        parser.error(f"--compare {args.compare}: no such file")
    start = time.process_time()
    found = fingerprints()
    args.out.write_text(json.dumps(found, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    total = sum(int(str(f["summaries"])) for f in found.values())
    print(f"{total} summaries of {len(found)} dialogue kinds in {time.process_time() - start:.1f} CPU s -> {args.out}")
    if args.compare is not None:
        other = json.loads(args.compare.read_text(encoding="utf-8"))
        differ = sorted(k for k in found.keys() | other.keys() if found.get(k) != other.get(k))
        print("\n".join(f"differs: {k}" for k in differ) or f"identical to {args.compare}")
        sys.exit(1 if differ else 0)


if __name__ == "__main__":
    main()
