"""Parallel replay: dialogues replayed in worker processes, records merged back in dialogue order.

Every worker builds its own runtime factory from the same spec (a run's config), so a dialogue
replays exactly as it would in one process: dialogues never share state, and the records of
each come back whole and in input order, which keeps metrics.json byte-identical to one worker.
"""

from __future__ import annotations

import multiprocessing
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from typing import Any

from memlab.dialogues.model import Dialogue
from memlab.runtime.agent import Runtime
from memlab.sim.records import Record
from memlab.sim.replay import ReplayOptions, replay_dialogue

RuntimeFactory = Callable[[Dialogue], Runtime]

_worker: tuple[RuntimeFactory, ReplayOptions] | None = None


def _start(build: Callable[[Any], RuntimeFactory], spec: Any, options: ReplayOptions) -> None:
    global _worker
    _worker = (build(spec), options)


def _replay(dialogue: Dialogue) -> list[Record]:
    assert _worker is not None, "the worker was not started"
    make_runtime, options = _worker
    return list(replay_dialogue(dialogue, make_runtime(dialogue), options))


def simulate_parallel(
    dialogues: Sequence[Dialogue],
    build: Callable[[Any], RuntimeFactory],
    spec: Any,
    workers: int,
    options: ReplayOptions,
) -> Iterator[list[Record]]:
    """Each dialogue's records, in dialogue order, replayed by `workers` processes.

    `build(spec)` makes the runtime factory in each worker; both must be picklable (a module-level
    function and a config). Processes are forked where the platform allows it (no re-import).
    """
    methods = multiprocessing.get_all_start_methods()
    context = multiprocessing.get_context("fork" if "fork" in methods else "spawn")
    with ProcessPoolExecutor(workers, mp_context=context, initializer=_start, initargs=(build, spec, options)) as pool:
        yield from pool.map(_replay, dialogues)
