"""Whole runs and per-call costs of the summarizing strategies, side by side with the cheap ones.

Timing runs only (``make bench``, or ``pytest tests/benchmarks/test_speed_bench.py --benchmark-enable -s``):
with benchmarks disabled (the default of ``make test``) they skip, since the other tests replay the
same paths. Each prints its figures and stores them in ``benchmark.extra_info``; only ratios are asserted.

- ``context=summarize`` beside ``context=sliding_window`` on 3 LoCoMo conversations (wall ratio), as
  ``memlab run`` processes (the issue's measure: process included) and in this process after a warm-up;
- the same per conversation: three dev7 conversations, each in a fresh process after a warm-up run on another
  (issue 29's 2x is printed as the target; the wall ratio is asserted within `RATIO_BOUND`, a regression guard);
- the five context strategies over all of locomo_dev7.json as one sweep (one process, as Hydra's
  basic launcher runs it, the summary memo shared by its jobs);
- ``hooks=summarization``, ``memory=summarize``, ``agent_memory=hybrid`` over the tau-bench set;
- ``longterm=locomo`` over locomo_dev7.json in a fresh process: peak memory (asserted within 1 GB) and CPU s
  (asserted within 45 s);
- time per call at 1,000 and 16,000 messages of history, per context strategy, in memory and on SQLite (their
  ratio, asserted at most 1.3 for none, trim and sliding_window).
"""

from __future__ import annotations

import dataclasses
import gc
import itertools
import json
import os
import resource
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from omegaconf import DictConfig
from peak_memory import Measured, measured_run

from memlab.dialogues import Dialogue, Session, load_locomo
from memlab.experiment import run_experiment, runtime_factory
from memlab.llm import extractive

CONTEXTS = ("none", "trim", "sliding_window", "summarize", "composite")
HISTORIES = (1_000, 16_000)
STORES = ("memory", "sqlite")
TIMED_CALLS = 100
BLOCKS = 5
FLAT = ("none", "trim", "sliding_window")  # strategies whose per-call growth is asserted
FLAT_BOUND = (
    1.3  # per-call cost at 16,000 messages over that at 1,000 (issue 29); generous: medians on a shared machine
)


def _load() -> str:
    return f"load {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores"


def _cpu() -> float:
    """CPU seconds of this process and of its finished children (the replay workers)."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def _timed_runs(make_config: Callable[..., DictConfig], tmp_path: Path, runs: dict[str, list[str]]) -> dict[str, float]:
    """Wall seconds per run (and "<label> cpu", CPU seconds), in order, in this process.

    The runs share the summary memo, as a sweep's jobs do. CPU seconds say more than wall time on
    a machine that other work shares.
    """
    seconds = {}
    for label, overrides in runs.items():
        cfg = make_config(*overrides, "sim.progress=false")
        start, cpu = time.perf_counter(), _cpu()
        run_experiment(cfg, tmp_path / label)
        seconds[label] = time.perf_counter() - start
        seconds[f"{label} cpu"] = _cpu() - cpu
    return seconds


def test_summarize_beside_sliding_window(timing, make_config, locomo_path: Path, tmp_path: Path) -> None:
    data = ["dataset=locomo", f"dataset.path={locomo_path}", "dataset.max_dialogues=3"]
    _timed_runs(make_config, tmp_path / "warm", {"warm": [*data, "dataset.max_dialogues=1", "context=summarize"]})
    extractive.SUMMARY_MEMO.clear()
    seconds: dict[str, float] = {}

    def both() -> None:
        seconds.update(
            _timed_runs(make_config, tmp_path, {c: [*data, f"context={c}"] for c in ("sliding_window", "summarize")})
        )

    timing.pedantic(both, setup=extractive.SUMMARY_MEMO.clear, rounds=1, iterations=1)
    ratio = seconds["summarize"] / seconds["sliding_window"]
    timing.extra_info.update(
        {f"{k}_s": round(v, 2) for k, v in seconds.items()} | {"ratio": round(ratio, 2), "load": _load()}
    )
    cpu = seconds["summarize cpu"] / seconds["sliding_window cpu"]
    timing.extra_info["cpu_ratio"] = round(cpu, 2)
    print(f"\n{seconds}: wall x{ratio:.2f}, cpu x{cpu:.2f} ({_load()})")


PROCESS_ROUNDS = 3


def test_summarize_beside_sliding_window_as_processes(timing, locomo_path: Path, tmp_path: Path) -> None:
    """``memlab run`` wall time, process included (start-up, replay, metrics, report), as a user waits for it.

    The two strategies take turns for `PROCESS_ROUNDS` rounds, each going first in every other round,
    and each keeps its best round: other work on a shared machine only adds time. The summary memo
    starts empty in every process. The benchmark's own time is the whole alternation.
    """
    data = ["dataset=locomo", f"dataset.path={locomo_path}", "dataset.max_dialogues=3", "sim.progress=false"]
    contexts = ("sliding_window", "summarize")
    rounds: dict[str, list[float]] = {c: [] for c in contexts}

    def run(context: str, n: int) -> None:
        start = time.perf_counter()
        args = [*data, f"context={context}", f"hydra.run.dir={tmp_path / f'{context}-{n}'}"]
        done = subprocess.run([sys.executable, "-m", "memlab", "run", *args], capture_output=True, text=True)
        rounds[context].append(time.perf_counter() - start)
        assert done.returncode == 0, done.stderr[-3000:]

    def alternate() -> None:
        for n in range(PROCESS_ROUNDS):
            for context in contexts[:: 1 if n % 2 == 0 else -1]:
                run(context, n)

    timing.pedantic(alternate, rounds=1, iterations=1)
    best = {c: min(seconds) for c, seconds in rounds.items()}
    ratio = best["summarize"] / best["sliding_window"]
    timing.extra_info.update(
        {f"{c}_s": [round(s, 2) for s in seconds] for c, seconds in rounds.items()}
        | {"ratio": round(ratio, 2), "load": _load()}
    )
    print(f"\nmemlab run, process included: {rounds}: best x{ratio:.2f} ({_load()})")


# Run in a fresh interpreter: a warm-up run of context=summarize on one conversation (imports, tokenizer),
# then context=A and context=B on another, each timed (wall s, CPU s); prints them as JSON.
_BESIDE_RUN = """
import json, sys, time
from pathlib import Path
from hydra import compose, initialize_config_module
from memlab import config
from memlab.experiment import run_experiment

config.register()
path, warm, timed, out, *contexts = sys.argv[1:]

def run(sample: str, context: str, folder: str) -> tuple[float, float]:
    with initialize_config_module(config_module="memlab.conf", version_base=None):
        cfg = compose(config_name="config", overrides=[
            "dataset=locomo", f"dataset.path={path}", f"dataset.sample_ids=[{sample}]",
            f"context={context}", "sim.progress=false"])
    start, cpu = time.perf_counter(), time.process_time()
    run_experiment(cfg, Path(out) / folder)
    return time.perf_counter() - start, time.process_time() - cpu

run(warm, "summarize", "warm")
print(json.dumps({c: run(timed, c, c) for c in contexts}))
"""
WARM_UP = "conv-26"  # dev7's first conversation: the warm-up of every timed one
TIMED = ("conv-30", "conv-41", "conv-42")
TARGET = 2.0  # issue 29: summarize within 2x sliding_window's wall time in one process (not met: docs/speed.md)
# Asserted until TARGET is met. The ratio depends on the machine as much as on the code: 2.38-3.25x at load 25-32
# (Dec 5), 2.37-3.04x at load 15-27 and 2.68x idle (Dec 6, two machines), 3.1-3.94x idle on a fourth (Dec 6,
# seventh session: its summarizer is slower beside its fixed per-run cost; docs/speed.md), 3.12-3.35x idle on a fifth
# (eighth session), 2.87-2.88x idle on an eighth (eleventh session).
RATIO_BOUND = 4.5


def test_summarize_beside_sliding_window_per_conversation(timing, locomo_path: Path, tmp_path: Path) -> None:
    """``context=summarize`` against ``context=sliding_window`` on three dev7 conversations, each in a fresh
    process after a warm-up run on another conversation (so no summary, corpus or sentence cache is shared):
    the summed wall times' ratio, asserted within `RATIO_BOUND` (a regression guard: issue 29's `TARGET` is not
    met and is printed beside it with the CPU ratio).

    The two strategies take turns going first, one conversation to the next.
    """
    contexts = ("sliding_window", "summarize")
    measured: dict[str, dict[str, list[float]]] = {}

    def run_all() -> None:
        for n, conversation in enumerate(TIMED):
            order = contexts[:: 1 if n % 2 == 0 else -1]
            args = [str(locomo_path), WARM_UP, conversation, str(tmp_path / conversation), *order]
            done = subprocess.run([sys.executable, "-c", _BESIDE_RUN, *args], capture_output=True, text=True)
            assert done.returncode == 0, done.stderr[-3000:]
            measured[conversation] = json.loads(done.stdout.splitlines()[-1])

    timing.pedantic(run_all, rounds=1, iterations=1)
    wall = {c: sum(m[c][0] for m in measured.values()) for c in contexts}
    cpu = {c: sum(m[c][1] for m in measured.values()) for c in contexts}
    ratio, cpu_ratio = wall["summarize"] / wall["sliding_window"], cpu["summarize"] / cpu["sliding_window"]
    timing.extra_info.update(
        {"per_conversation": measured, "ratio": round(ratio, 2), "cpu_ratio": round(cpu_ratio, 2), "load": _load()}
    )
    print(
        f"\nper conversation, fresh processes: {measured}: wall {wall['summarize']:.2f} / "
        f"{wall['sliding_window']:.2f} s x{ratio:.2f} (target x{TARGET}), cpu x{cpu_ratio:.2f} ({_load()})"
    )
    assert ratio <= RATIO_BOUND


PEAK_LIMIT_KIB = 1024 * 1024  # issue 29: a long-term run over dev7 within 1 GB
CPU_LIMIT_S = 45.0  # issue 29: and within 45 CPU s (process and replay workers, user + sys)


def test_longterm_locomo_dev7_peak_memory(timing, locomo_path: Path, tmp_path: Path) -> None:
    """``memlab run longterm=locomo`` over locomo_dev7.json in a fresh process: its peak memory (asserted
    within 1 GB: the larger of its process's and its replay workers', as `peak_memory` measures it) and its CPU
    seconds (user + sys of both, asserted within 45 s; CPU time grows on a loaded machine too, so a failure says
    the load beside it).
    """
    args = ["run", "longterm=locomo", "dataset=locomo", f"dataset.path={locomo_path}", "sim.progress=false"]
    measured: list[Measured] = []
    timing.pedantic(lambda: measured.append(measured_run([*args, f"hydra.run.dir={tmp_path / 'run'}"])), rounds=1)
    run = measured[0]
    timing.extra_info.update({"peak_mib": round(run.peak_mib, 1), "cpu_s": round(run.cpu_s, 1), "load": _load()})
    print(f"\nlongterm=locomo over dev7: peak {run.peak_mib:.0f} MiB, {run.cpu_s:.1f} CPU s ({_load()})")
    assert run.peak_kib <= PEAK_LIMIT_KIB
    assert run.cpu_s <= CPU_LIMIT_S, f"{run.cpu_s:.1f} CPU s ({_load()})"


def _sweep(
    timing: Any, make_config: Callable[..., DictConfig], tmp_path: Path, runs: dict[str, list[str]], title: str
) -> None:
    """Time `runs` as one sweep in this process (its jobs share the summary memo) and report each and the total."""
    seconds: dict[str, float] = {}
    timing.pedantic(
        lambda: seconds.update(_timed_runs(make_config, tmp_path, runs)), setup=extractive.SUMMARY_MEMO.clear, rounds=1
    )
    total = sum(v for k, v in seconds.items() if not k.endswith(" cpu"))
    timing.extra_info.update(
        {f"{k}_s": round(v, 2) for k, v in seconds.items()} | {"total_s": round(total, 1), "load": _load()}
    )
    print(f"\n{title}: {total:.1f} s {seconds} ({_load()})")


def test_context_sweep_over_locomo_dev7(timing, make_config, locomo_path: Path, tmp_path: Path) -> None:
    data = ["dataset=locomo", f"dataset.path={locomo_path}"]
    runs = {c: [*data, f"context={c}"] for c in CONTEXTS}
    _sweep(timing, make_config, tmp_path, runs, "five context strategies over locomo_dev7")


def test_tau_bench_summarizers(timing, make_config, tau_bench_path: Path, tmp_path: Path) -> None:
    data = ["dataset=tau_bench", f"dataset.path={tau_bench_path}"]
    runs = {
        "hooks=summarization": [*data, "+hooks@hooks.summarization=summarization"],
        "memory=summarize": [*data, "memory=summarize"],
        "agent_memory=hybrid": [*data, "agent_memory=hybrid"],
    }
    _sweep(timing, make_config, tmp_path, runs, "summarizers over tau-bench")


def _long_dialogue(locomo_path: Path, length: int) -> Dialogue:
    """`length` LoCoMo messages (the corpus repeated, with fresh ids and alternating roles), one session."""
    corpus = [m for d in load_locomo(locomo_path) for m in d.messages()]
    roles = itertools.cycle(("user", "assistant"))
    messages = tuple(
        dataclasses.replace(m, id=f"S{i}", role=next(roles)) for i, m in zip(range(length), itertools.cycle(corpus))
    )
    return Dialogue(id=f"synthetic-{length}", sessions=(Session(id="s1", messages=messages),))


@pytest.mark.parametrize("store", STORES)
@pytest.mark.parametrize("context", CONTEXTS)
def test_time_per_call_is_flat_in_history_length(
    timing, make_config, locomo_path: Path, tmp_path: Path, context: str, store: str
) -> None:
    """CPU microseconds per call (append one message, read the history's length, build the request) after
    1,000 and after 16,000 messages, in memory and on SQLite (`agent_memory=chat`).

    The fastest of `BLOCKS` blocks of `TIMED_CALLS` calls each, the two lengths' blocks taking turns and the
    garbage collector off during a block, as `timeit` measures (a median of blocks run one length after the other
    read 0.61x to 1.61x for sliding_window on one idle machine: the machine's drift, and collections whose cost
    follows the whole heap). The growth of none, trim and sliding_window is asserted (`FLAT`): what each call reads
    of the history, not all of it.
    """
    where = (
        ["agent_memory=chat", "store=sqlite", f"store.path='{tmp_path / 'history.sqlite'}'"]
        if store == "sqlite"
        else []
    )
    make_runtime = runtime_factory(make_config(f"context={context}", *where))
    runs = {}
    for length in HISTORIES:
        dialogue = _long_dialogue(locomo_path, length + BLOCKS * TIMED_CALLS)
        messages = list(dialogue.messages())
        runtime = make_runtime(dialogue)
        runtime.history.replace(messages[:length])  # one write, as a resumed history starts
        runtime.build_request()  # the first summary of this history is computed here, untimed
        runs[length] = (runtime, messages[length:])
    blocks: dict[int, list[float]] = {length: [] for length in HISTORIES}
    for b in range(BLOCKS):  # the lengths take turns, so a change in the machine's speed reaches both alike
        for length, (runtime, rest) in runs.items():

            def calls(block: list[Any] = rest[b * TIMED_CALLS :][:TIMED_CALLS], rt: Any = runtime) -> None:
                for m in block:
                    rt.history.append(m)
                    len(rt.history)  # as each replayed call reads it (CallRecord.messages_in)
                    rt.build_request(query=m.text)

            gc.collect()
            gc.disable()  # as timeit does: a collection's cost follows the whole process's heap, not the call
            try:
                start = time.process_time()
                if length == HISTORIES[-1] and b == 0:
                    timing.pedantic(calls, rounds=1, iterations=1)
                else:
                    calls()
                blocks[length].append((time.process_time() - start) / TIMED_CALLS * 1e6)
            finally:
                gc.enable()
    per_call = {length: min(times) for length, times in blocks.items()}
    ratio = per_call[HISTORIES[-1]] / per_call[HISTORIES[0]]
    timing.extra_info.update(
        {f"us_per_call_{n}": round(v, 1) for n, v in per_call.items()} | {"ratio": round(ratio, 2), "load": _load()}
    )
    short, long = HISTORIES
    print(
        f"\n{context} ({store}): {per_call[short]:.0f} us/call at {short} messages, {per_call[long]:.0f} at {long}: "
        f"x{ratio:.2f} ({_load()})"
    )
    if context in FLAT:
        assert ratio <= FLAT_BOUND, f"{context} on {store}: x{ratio:.2f} from {short} to {long} messages"
