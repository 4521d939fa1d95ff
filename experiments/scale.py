"""Scale: strategies on one long synthetic dialogue, each run in a process of its own; CPU seconds and peak RSS.

python experiments/scale.py [--cases CASE ...] [--sizes N ...] [--chars N ...] [--tree PATH ...]

Writes a JSONL dialogue of N messages (user and assistant in turn, two short sentences each) into a
temporary folder for each size, then runs ``memlab run dataset=jsonl ... sim.workers=1`` once per case and
size, one after another, each in a process of its own (``python -m memlab``), and prints its wall time, CPU
seconds (user + sys) and peak resident set, from the child's own rusage (`os.wait4`). Linux carries a parent's
peak over fork and exec into a child's `ru_maxrss` (tests/peak_memory.py), but this script's process stays
near 30 MB, below any run's. The case `chat_long_message` replays instead one user message of N characters
(`--chars`) of such sentences, then a reply, under ``longterm=chat``: the rule policy reads it for a durable
statement (`memlab.longterm.policy.durable_statement`), finds none, so reads all of it. `--tree` given twice
(another checkout, or a ``git archive`` of one) runs each case with each tree first on PYTHONPATH, one after
the other: a before/after at the same load (docs/speed.md, "Scale"). The defaults take about a minute;
16,000 messages take minutes per case (tool_rounds before 1dba453: most of an hour).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from script_args import positive

ROOT = Path(__file__).resolve().parents[1]
# The cases of docs/speed.md's "Scale" section: the overrides of each run.
CASES = {
    "summarize": ["context=summarize"],
    "composite": ["context=composite"],
    "per_task": ["agent_memory=per_task"],
    "tool_rounds": ["agent_memory=tool_rounds"],
    "chat_long_message": ["longterm=chat"],
}
LONG_MESSAGE_CASES = ("chat_long_message",)  # sized in characters (--chars), not messages
PLACES = ("Lisbon", "Oslo", "Kyoto", "Lima", "Accra", "Perth", "Quebec", "Tbilisi", "Hanoi", "Cusco", "Bergen")
THINGS = ("the bus", "the ferry", "the museum", "the market", "the bakery", "the tram", "the library", "the park")
STATES = ("late", "crowded", "closed", "quiet", "early", "busy", "empty", "cold", "full")


def sentences(i: int) -> str:
    """Message `i`'s two short sentences, no two messages of a dialogue alike."""
    place, thing, state = PLACES[i % len(PLACES)], THINGS[i % len(THINGS)], STATES[i % len(STATES)]
    return f"On day {i} the trip reached {place}. Then {thing} was {state} at {i % 24} o'clock."


def dialogue(messages: int) -> dict[str, object]:
    """One JSONL line: `messages` messages, user first, then user and assistant in turn."""
    roles = ("user", "assistant")
    return {
        "id": f"long-{messages}",
        "messages": [{"role": roles[i % 2], "content": sentences(i)} for i in range(messages)],
    }


def long_message(chars: int) -> dict[str, object]:
    """One JSONL line: a user message of at least `chars` characters of such sentences, then a reply."""
    parts: list[str] = []
    length = 0
    while length < chars:
        parts.append(sentences(len(parts)))
        length += len(parts[-1]) + 1
    text = " ".join(parts)
    return {
        "id": f"long-message-{chars}",
        "messages": [{"role": "user", "content": text}, {"role": "assistant", "content": "Noted."}],
    }


def measured(cmd: list[str], env: dict[str, str], cwd: Path) -> tuple[float, float, float]:
    """(wall s, CPU s, peak RSS MiB) of one run of `cmd` in a process of its own; its output goes to cwd/out.txt."""
    start = time.perf_counter()
    with (cwd / "out.txt").open("wb") as out:
        child = subprocess.Popen(cmd, env=env, cwd=cwd, stdout=out, stderr=subprocess.STDOUT)
        _, status, usage = os.wait4(child.pid, 0)
    child.returncode = os.waitstatus_to_exitcode(status)
    wall = time.perf_counter() - start
    if child.returncode != 0:
        tail = (cwd / "out.txt").read_text(errors="replace")[-2000:]
        raise SystemExit(f"{' '.join(cmd)} exited {child.returncode}:\n{tail}")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024  # ru_maxrss: KiB on Linux


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--cases", nargs="+", choices=CASES, default=list(CASES))
    parser.add_argument("--sizes", nargs="+", type=positive, default=[1000], help="messages per dialogue (1000)")
    parser.add_argument("--chars", nargs="+", type=positive, default=[200_000], help="chat_long_message's (200000)")
    parser.add_argument("--tree", action="append", type=Path, help="the memlab to run (default: this checkout's)")
    args = parser.parse_args()
    trees = [t.resolve() for t in args.tree or [ROOT]]
    base_env = {**os.environ, "HF_HUB_OFFLINE": "1", "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    print(f"load average {os.getloadavg()[0]:.1f} at the start")
    print(f"{'case':<18} {'size':>9} {'wall s':>8} {'CPU s':>8} {'peak MiB':>8}  tree", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        scratch = Path(tmp)
        for case in args.cases:
            long = case in LONG_MESSAGE_CASES
            for size in args.chars if long else args.sizes:
                data = scratch / f"{case}-{size}.jsonl"
                data.write_text(json.dumps(long_message(size) if long else dialogue(size)) + "\n", encoding="utf-8")
                for n, tree in enumerate(trees):
                    run_dir = scratch / f"run-{case}-{size}-{n}"
                    overrides = [
                        "dataset=jsonl",
                        f"dataset.path={data}",
                        *CASES[case],
                        "sim.workers=1",
                        "sim.progress=false",
                        f"output_dir={run_dir}",
                    ]
                    env = {**base_env, "PYTHONPATH": str(tree)}
                    wall, cpu, peak = measured([sys.executable, "-m", "memlab", "run", *overrides], env, scratch)
                    unit = "chars" if long else "msgs"
                    print(f"{case:<18} {size:>9,} {wall:8.1f} {cpu:8.1f} {peak:8.0f}  {tree} ({unit})", flush=True)
                    shutil.rmtree(run_dir)
    print(f"load average {os.getloadavg()[0]:.1f} at the end")


if __name__ == "__main__":
    main()
