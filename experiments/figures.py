"""Regenerate the figures README.md and docs/*.md quote: run what measures them, write docs/figures/, rewrite the docs.

    python experiments/figures.py                 # every source (what `make figures` runs), then the docs
    python experiments/figures.py demo conv26     # only these sources, then the docs
    python experiments/figures.py --rewrite       # only put docs/figures/'s figures into the docs (after editing one)
    python experiments/figures.py --check         # compare the docs with docs/figures/ (no run): exit 1 on a difference

Each source writes `docs/figures/<source>.json`: the command that made it, the commit and whether the checkout
was modified, each run's overrides (the `memlab run` line that reproduces it) and every metric of its
`metrics.json`, and the named values the source computes. The files hold no time, so a rerun on the same commit
writes the same bytes. Markers in the docs name a figure of a file and its format (`memlab.report.figures`);
tests/test_figures.py fails when a quoted figure differs from its file. `recorded.json` (timings and figures of
runs too long to repeat here, each with the command that measured it) and `external.json` (figures quoted from
outside memlab, each with its source) are written by hand: no source regenerates them.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from memlab.report.figures import RESULTS_DIR, check_docs, rewrite_docs

ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("MEMLAB_SHARED", ROOT.parent / "shared")) / "datasets"
sys.path.insert(0, str(ROOT / "experiments"))  # the sources import the experiment scripts they quote
DEV7, TAU = "locomo/locomo_dev7.json", "tau_bench/airline_gpt4o_dev150.json"
CONTEXTS = ("none", "trim", "sliding_window", "summarize", "composite")

Producer = Callable[[Path], dict[str, Any]]
SOURCES: dict[str, Producer] = {}


def source(producer: Producer) -> Producer:
    """Register a source: a function of a scratch folder returning its `runs` and `values`."""
    SOURCES[producer.__name__] = producer
    return producer


def data(relative: str) -> str:
    """A corpus override value as the docs write it (`../shared/datasets/...`); the run reads the real path."""
    return f"../shared/datasets/{relative}"


def run(scratch: Path, name: str, overrides: list[str]) -> dict[str, Any]:
    """One `memlab run OVERRIDES` into scratch, as the results file records it.

    Its command, every metric of its `metrics.json`, the mean of `calls.csv`'s `messages_kept` and, a timing
    (not deterministic, never re-measured by the check), its wall time in seconds.
    """
    import pandas as pd

    import memlab

    shared = [o.replace("../shared/datasets/", f"{SHARED}/") for o in overrides]
    start = time.perf_counter()
    result = memlab.run(shared, scratch / name)
    wall = time.perf_counter() - start
    metrics = json.loads((result.run_dir / "metrics.json").read_text(encoding="utf-8"))
    latency = json.loads((result.run_dir / "latency.json").read_text(encoding="utf-8"))
    kept = float(pd.read_csv(result.run_dir / "calls.csv")["messages_kept"].mean())
    return {
        "command": " ".join(["memlab", "run", *overrides]),
        "metrics": metrics,
        "messages_kept.mean": round(kept, 6),
        "timing": {"wall_s": round(wall, 1), **latency},
    }


def runs(scratch: Path, commands: dict[str, list[str]]) -> dict[str, dict[str, Any]]:
    """Several named runs, one after another."""
    return {name: run(scratch, name, overrides) for name, overrides in commands.items()}


@source
def demo(scratch: Path) -> dict[str, Any]:
    """`make demo` (`memlab run experiment=demo`): the five context strategies on the synthetic dialogues."""
    found = runs(scratch, {c: ["experiment=demo", f"context={c}"] for c in CONTEXTS})
    trim = found["trim"]["metrics"]["tokens.prompt.mean"]
    wall = sum(r["timing"]["wall_s"] for r in found.values())  # a timing: the five runs one after another
    return {"runs": found, "values": {"trim_budget_1000_used": trim / 1000, "wall_s": round(wall, 1)}}


@source
def dev7(scratch: Path) -> dict[str, Any]:
    """LoCoMo dev7 (7 conversations): the context strategies (their own estimate counter), sliding_window at 2,000
    tokens counted both ways, and the memory strategies."""
    locomo = ["dataset=locomo", f"dataset.path={data(DEV7)}"]
    commands = {c: [*locomo, f"context={c}"] for c in CONTEXTS}
    for counter in ("estimate", "exact"):
        commands[f"sliding_window_2000_{counter}"] = [
            *locomo,
            "context=sliding_window",
            "context.max_tokens=2000",
            f"context.counter={counter}",
        ]
    commands |= {f"memory_{m}": [*locomo, f"memory={m}"] for m in ("trim", "delete", "filter", "summarize")}
    commands["research"] = ["experiment=research"]
    found = runs(scratch, commands)
    mean = {c: found[f"sliding_window_2000_{c}"]["metrics"]["tokens.prompt.mean"] for c in ("estimate", "exact")}
    used = {f"sliding_window_2000_{c}_budget_used": tokens / 2000 for c, tokens in mean.items()}
    return {"runs": found, "values": used}


@source
def tau(scratch: Path) -> dict[str, Any]:
    """tau-bench airline dev150 (150 trajectories): the agent-memory compressors, the presets, three contexts."""
    tau_bench = ["dataset=tau_bench", f"dataset.path={data(TAU)}"]
    commands = {f"agent_memory_{a}": [*tau_bench, f"agent_memory={a}"] for a in ("chat", "windowed", "hybrid")}
    commands["agent_memory_hybrid_counting"] = [*tau_bench, "agent_memory=hybrid", "agent_memory.compressor.llm=null"]
    commands["agent_memory_per_task"] = [*tau_bench, "agent_memory=per_task"]
    commands |= {p: [f"experiment={p}"] for p in ("faq_support", "tickets", "codeact")}
    commands |= {f"context_{c}": [*tau_bench, f"context={c}"] for c in ("sliding_window", "composite")}
    return {"runs": runs(scratch, commands)}


@source
def conv26(scratch: Path) -> dict[str, Any]:
    """LoCoMo conv-26 (the first conversation of dev7): summarizing strategies, and long-term memory with tools."""
    first = ["dataset=locomo", f"dataset.path={data(DEV7)}", "dataset.max_dialogues=1"]
    commands = {
        "memory_summarize": [*first, "memory=summarize"],
        "hybrid_trim": [*first, "agent_memory=hybrid", "memory=trim"],
        "context_summarize": [*first, "context=summarize"],
        "longterm_session_start": [*first, "longterm=chat", "longterm.memory_tools=false"],
        "longterm_every_turn": [*first, "longterm=chat", "longterm.memory_tools=false", "longterm.retrieve=every_turn"],
        "longterm_tools": [*first, "longterm=chat", "longterm.memory_tools=true"],
    }
    found = runs(scratch, commands)
    spent = 1 - found["context_summarize"]["metrics"]["tokens.net_saved_ratio"]  # prompts + summaries over full history
    metric = {name: r["metrics"] for name, r in found.items()}
    injected = "longterm.injected_tokens.per_call"
    values = {
        "summarize_spent_over_full_history": spent,
        "every_turn_extra_injected_tokens": metric["longterm_every_turn"][injected]
        - metric["longterm_session_start"][injected],
        "tool_rounds": metric["longterm_tools"]["calls"] - metric["longterm_session_start"]["calls"],
    }
    return {"runs": found, "values": values}


@source
def peers(scratch: Path) -> dict[str, Any]:
    """The peers README quotes: LoCoMo dev7 at 1,000 and tau-bench at 4,000 estimated tokens (`experiment=peers`)."""
    estimate = ["budget_counter=estimate"]
    commands = {
        f"dev7_{p}_1000": ["experiment=peers", f"+experiment/peers={p}_1000", *estimate]
        for p in ("sliding_window", "langchain_trim", "autogen_token_limited")
    }
    commands |= {
        f"tau_{p}_4000": ["experiment=peers_tau_bench", f"+experiment/peers={p}_4000", *estimate]
        for p in ("sliding_window", "langchain_trim", "llamaindex_buffer", "autogen_token_limited")
    }
    found = runs(scratch, commands)
    p50 = {name: r["timing"]["latency.context.p50_us"] for name, r in found.items() if name.startswith("dev7_")}
    own = p50["dev7_sliding_window_1000"]
    ratios = {f"{name}.time_ratio": p50[name] / own for name in p50}  # timings: a ratio of two medians
    return {"runs": found, "values": ratios}


def versions(*distributions: str) -> dict[str, str]:
    """`version.<distribution>`: the installed version of each library a peer source drove."""
    from importlib.metadata import version

    return {f"version.{name}": version(name) for name in distributions}


def milliseconds(found: dict[str, dict[str, Any]], *timings: str) -> dict[str, Any]:
    """`<run>.<timing>_ms`: each run's latency medians (`latency.<x>.p50_us`) in milliseconds (timings)."""
    out = {}
    for name, r in found.items():
        for timing in timings:
            us = r["timing"].get(f"latency.{timing}.p50_us")
            out[f"{name}.{timing}_p50_ms"] = None if us is None else round(us / 1000, 1)
    return out


@source
def peers_longterm(scratch: Path) -> dict[str, Any]:
    """`experiment=peers_longterm`: memlab's `longterm=locomo` and the long-term peers on LoCoMo dev7, offline."""
    entries = ("locomo", "llamaindex_memory", "mem0", "langmem")
    found = runs(scratch, {e: ["experiment=peers_longterm", "context=none", f"longterm={e}"] for e in entries})
    values = versions("llama-index-core", "mem0ai", "qdrant-client", "langmem", "langgraph")
    return {"runs": found, "values": values | milliseconds(found, "extract", "retrieval")}


@source
def peers_memory(scratch: Path) -> dict[str, Any]:
    """`experiment=peers_memory`: memlab's and the libraries' stored-history summarizers, offline: the Memory
    layer on LoCoMo dev7 (`memory=`), the AgentMemory compressors on tau-bench dev150 (`agent_memory=`)."""
    entries = (
        *(f"dev7_{m}" for m in ("none", "summarize", "llamaindex_summary", "langmem_summary")),
        *(f"tau_{a}" for a in ("chat", "hybrid", "llamaindex_summary", "langmem_summary")),
    )
    found = runs(scratch, {e: ["experiment=peers_memory", f"+experiment/peers_memory={e}"] for e in entries})
    return {"runs": found, "values": versions("llama-index-core", "langmem", "langchain-core")}


@source
def context_bench(scratch: Path) -> dict[str, Any]:
    """Timings: the context strategies and `trim_messages` per call on a 600-message LoCoMo history (pytest-benchmark).

    `<entry>.min_us` / `.min_ms` is the minimum over the benchmark's rounds; `speedup` and
    `speedup_vs_memoized_counter` are the benchmark's own `extra_info` (best of its repeats, `trim_messages` over
    the strategy). Not deterministic: the check compares the docs with this file and never re-measures.
    """
    out = scratch / "bench.json"
    bench = ["tests/benchmarks/test_context_bench.py", "-k", "per_call", "--benchmark-enable", "--benchmark-only"]
    quiet = ["-q", "-p", "no:cacheprovider", f"--benchmark-json={out}"]
    subprocess.run([sys.executable, "-m", "pytest", *bench, *quiet], cwd=ROOT, check=True, stdout=subprocess.DEVNULL)
    values: dict[str, Any] = {}
    for b in json.loads(out.read_text(encoding="utf-8"))["benchmarks"]:
        entry = "trim_messages_" + b["params"]["counter"] if "counter" in b["params"] else b["params"]["name"]
        values |= {
            f"{entry}.min_us": round(b["stats"]["min"] * 1e6, 1),
            f"{entry}.min_ms": round(b["stats"]["min"] * 1e3, 2),
        }
        values |= {f"{entry}.{k}": v for k, v in b["extra_info"].items() if k != "messages"}
    return {"values": values}


@source
def longterm(scratch: Path) -> dict[str, Any]:
    """Long-term retrieval with the offline defaults (`longterm=locomo`): LoCoMo dev7, and the `ci_longterm` job;
    `bm25_raw_turns.*`: BM25 over dev7's raw turns with memlab's preprocessing, on the questions `longterm.*` counts
    (experiments/longterm_baselines.py's baseline, all categories)."""
    from longterm_baselines import BM25_MEMLAB, baselines

    from memlab.dialogues import load_locomo

    commands = {
        "locomo": ["dataset=locomo", f"dataset.path={data(DEV7)}", "longterm=locomo"],
        "ci_longterm": ["experiment=ci_longterm", "context=none"],  # the gate's job: conv-26, answers scored
    }
    bm25 = baselines(load_locomo(SHARED / DEV7), None)[BM25_MEMLAB]["all"]
    return {"runs": runs(scratch, commands), "values": {f"bm25_raw_turns.{k}": round(v, 6) for k, v in bm25.items()}}


@source
def backends(scratch: Path) -> dict[str, Any]:
    """The offline backends on LoCoMo dev7 (docs/backends.md): extractive summaries and QA, embedder retrieval."""
    from embed_retrieval import bm25_reference

    from memlab.dialogues import load_locomo
    from memlab.embed import HashingEmbedder
    from memlab.eval import evaluate_answers, evaluate_retrieval, evaluate_summaries
    from memlab.llm import ExtractiveChatModel

    dialogues = load_locomo(SHARED / DEV7)
    probes = [p for d in dialogues for p in d.probes]

    def share(category: str, test: Callable[[Any], bool]) -> float:
        chosen = [p for p in probes if p.category == category]
        return sum(map(test, chosen)) / len(chosen)

    values: dict[str, Any] = {  # what tests/dialogues/test_locomo.py checks LoCoMo's category numbering with
        "locomo.multi_hop_several_turns": share("multi-hop", lambda p: len(p.evidence) > 1),
        "locomo.temporal_when": share("temporal", lambda p: p.question.lower().startswith("when")),
        "locomo.single_hop_one_turn": share("single-hop", lambda p: len(p.evidence) == 1),
    }
    for method, figures in evaluate_summaries(dialogues).items():
        values |= {f"summaries.{method}.{k}": v for k, v in figures.items()}
    start = time.perf_counter()
    values |= {f"qa.{k}": v for k, v in evaluate_answers(dialogues, ExtractiveChatModel()).items()}
    values["qa.wall_s"] = time.perf_counter() - start  # a timing
    embedders = {
        "hashing": evaluate_retrieval(dialogues, HashingEmbedder),
        "hashing_1536": evaluate_retrieval(dialogues, lambda: HashingEmbedder(dim=1536)),
        "bm25": bm25_reference(dialogues),
    }
    for name, figures in embedders.items():
        values |= {f"retrieval.{name}.{k}": v for k, v in figures.items()}
    return {"values": {k: round(float(v), 1 if k.endswith("wall_s") else 6) for k, v in values.items()}}


def write(name: str, produced: dict[str, Any]) -> Path:
    """docs/figures/<name>.json: the produced figures with the command, commit and checkout state that made them."""
    revision = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    # Modified tracked files other than the docs the figures go into: what could change a measurement.
    changed = ["git", "status", "--porcelain", "--untracked-files=no", "--", ".", ":!docs", ":!README.md"]
    status = subprocess.run(changed, cwd=ROOT, capture_output=True, text=True).stdout
    doc = SOURCES[name].__doc__ or ""
    results = {
        "source": name,
        "about": doc.strip(),
        "command": f"python experiments/figures.py {name}",
        "commit": revision,
        "dirty": bool(status.strip()),
        "runs": produced.get("runs", {}),
        "values": produced.get("values", {}),
    }
    path = ROOT / RESULTS_DIR / f"{name}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(results, indent=1, sort_keys=True, ensure_ascii=False) + "\n", encoding="utf-8")
    return path


def main(argv: list[str]) -> int:
    """Regenerate the chosen sources (all by default) and rewrite the docs; or only rewrite, or only check."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sources", nargs="*", help=f"sources to regenerate (default: all of {', '.join(SOURCES)})")
    only = parser.add_mutually_exclusive_group()
    only.add_argument("--check", action="store_true", help="only compare the docs with docs/figures/")
    only.add_argument("--rewrite", action="store_true", help="only put docs/figures/'s figures into the docs")
    args = parser.parse_args(argv)
    unknown = sorted(set(args.sources) - SOURCES.keys())
    if unknown:
        parser.error(f"unknown source {', '.join(unknown)}; sources: {', '.join(SOURCES)}")
    os.chdir(ROOT)  # the experiments' data paths (`../shared/datasets`) are relative to the checkout
    for name in [] if args.check or args.rewrite else args.sources or SOURCES:
        print(f"figures: {name} ...", file=sys.stderr, flush=True)
        with tempfile.TemporaryDirectory(prefix=f"figures-{name}-") as scratch:
            print(f"figures: wrote {write(name, SOURCES[name](Path(scratch))).relative_to(ROOT)}", file=sys.stderr)
    if not args.check:
        for quote in rewrite_docs(ROOT):
            if not quote.expected.startswith("<"):
                print(f"figures: rewrote {quote}", file=sys.stderr)
    stale = check_docs(ROOT)
    for quote in stale:
        print(quote, file=sys.stderr)
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
