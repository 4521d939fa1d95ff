"""The long-term peers' table in docs/peers.md, from the job folders of one `experiment=peers_longterm` sweep.

    memlab run -m experiment=peers_longterm sim.workers=1
    python experiments/peers_longterm_table.py reports/sweeps/peers_longterm/<time>-<token> [--write docs/peers.md]

Reads each job's metrics.json, latency.json and manifest.json (nothing is recomputed) and prints one markdown
table, entries in the sweep's order, with the libraries' versions and the git revision the runs recorded;
``--write`` replaces the text between the ``peers-longterm-table`` markers of the given file instead.
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path
from typing import Any

BEGIN, END = "<!-- peers-longterm-table:begin -->", "<!-- peers-longterm-table:end -->"
LIBRARIES = ("llama-index-core", "mem0ai", "qdrant-client", "langmem", "langgraph")
# (header, file, key, format): percent, integer, one decimal, dollars, or microseconds shown as milliseconds.
COLUMNS = (
    ("calls", "metrics", "calls", "int"),
    ("recall@1", "metrics", "longterm.recall@1", "pct"),
    ("recall@5", "metrics", "longterm.recall@5", "pct"),
    ("recall@10", "metrics", "longterm.recall@10", "pct"),
    ("recall@20", "metrics", "longterm.recall@20", "pct"),
    ("nDCG@10", "metrics", "longterm.ndcg@10", "pct"),
    ("recall_any@10 (turns)", "metrics", "longterm.recall_any@10", "pct"),
    ("injected tokens / question", "metrics", "longterm.injected_tokens.mean", "int"),
    ("injected tokens / call", "metrics", "longterm.injected_tokens.per_call", "int"),
    ("memories", "metrics", "longterm.memories", "int"),
    ("LLM calls", "metrics", "llm.calls", "int"),
    ("aux tokens", "metrics", "tokens.aux.total", "int"),
    ("aux cost", "metrics", "cost.aux_usd", "usd"),
    ("save p50 ms", "latency", "latency.extract.p50_us", "ms"),
    ("retrieval p50 ms", "latency", "latency.retrieval.p50_us", "ms"),
)


def _cell(value: Any, fmt: str) -> str:
    if value is None:
        return "—"
    if fmt == "pct":
        return f"{100 * value:.1f}%"
    if fmt == "int":
        return f"{round(value):,}"
    if fmt == "usd":
        return f"${value:.2f}"
    return f"{value / 1000:.1f}"


def table(sweep: Path) -> str:
    """The markdown table of every job folder under `sweep` (folders named ``<n>_...``, in n's order)."""
    jobs = [p for p in sweep.iterdir() if (p / "metrics.json").is_file()]
    jobs.sort(key=lambda p: int(p.name.split("_")[0]))
    if not jobs:
        raise SystemExit(f"{sweep}: no job folder with a metrics.json")
    lines = [
        "| entry | " + " | ".join(h for h, *_ in COLUMNS) + " |",
        "|---|" + "---|" * len(COLUMNS),
    ]
    versions: dict[str, str] = {}
    revisions = set()
    for job in jobs:
        data = {name: json.loads((job / f"{name}.json").read_text()) for name in ("metrics", "latency", "manifest")}
        entry = re.search(r"longterm=([^,]+)", job.name)
        cells = [_cell(data[file].get(key), fmt) for _, file, key, fmt in COLUMNS]
        lines.append(f"| {entry.group(1) if entry else job.name} | " + " | ".join(cells) + " |")
        versions.update({k: v for k, v in data["manifest"]["versions"].items() if k in LIBRARIES})
        revisions.add(str(data["manifest"]["git_revision"])[:7])
    first = json.loads((jobs[0] / "metrics.json").read_text())
    note = (
        f"\n{int(first['longterm.questions']):,} questions with evidence (adversarial left out); "
        f"runs at {', '.join(sorted(revisions))}; " + ", ".join(f"{k} {v}" for k, v in sorted(versions.items())) + ".\n"
    )
    return "\n".join(lines) + "\n" + note


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sweep", type=Path, help="the sweep folder of experiment=peers_longterm")
    parser.add_argument("--write", type=Path, help="replace the table between the markers of this file")
    args = parser.parse_args()
    text = table(args.sweep)
    if args.write is None:
        print(text)
        return
    doc = args.write.read_text()
    if BEGIN not in doc or END not in doc:
        raise SystemExit(f"{args.write}: no {BEGIN} ... {END} markers")
    head, rest = doc.split(BEGIN, 1)
    args.write.write_text(head + BEGIN + "\n" + text + rest[rest.index(END) :])


if __name__ == "__main__":
    main()
