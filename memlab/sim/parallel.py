"""Parallel replay: dialogues replayed in worker processes, records merged back in dialogue order.

Every worker builds its own runtime factory from the same spec (a run's config), so a dialogue
replays exactly as it would in one process: dialogues that share state (one user's, when long-term
memory carries it from one to the next) form a chain that one worker replays in input order, other
chains share nothing, and the records of each dialogue come back whole and in input order, which keeps
metrics.json byte-identical to one worker.
A `Shared` pair carries what workers learn that the parent may reuse (cached model answers).
"""

from __future__ import annotations

import contextlib
import ctypes
import gc
import multiprocessing
import multiprocessing.util
import os
import signal
import sys
from collections.abc import Callable, Generator, Hashable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from typing import Any

from memlab.dialogues.model import Dialogue
from memlab.runtime.agent import Runtime
from memlab.sim.progress import tallied
from memlab.sim.records import Record
from memlab.sim.replay import ReplayOptions, end_user, replay_dialogue, user_ends
from memlab.stores import close_store

RuntimeFactory = Callable[[Dialogue], Runtime]
STOP_GRACE_S = 10.0  # a terminated worker has this long to exit before it is killed
PR_SET_PDEATHSIG = 1  # prctl(2): the signal a process gets when its parent dies
WORKER_SIGNALS = {signal.SIGINT, signal.SIGTERM}  # held in a worker from its fork until it has its own handlers


@dataclass(frozen=True)
class Shared:
    """`take()` in a worker after each dialogue; `give(taken)` in the parent with what came back.

    Args:
        take: Called in a worker after each dialogue.
        give: Called in the parent with what `take` returned.
    """

    take: Callable[[], Any]
    give: Callable[[Any], None]


_worker: tuple[RuntimeFactory, ReplayOptions, Shared | None, Any] | None = None


def _start(
    build: Callable[[Any], RuntimeFactory],
    spec: Any,
    options: ReplayOptions,
    shared: Shared | None,
    tally: Any,
    forked: bool,
    parent: int,
) -> None:
    global _worker
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle: it stops the workers
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # not the parent's handler (`memlab run`'s): a worker just ends
    signal.pthread_sigmask(signal.SIG_UNBLOCK, WORKER_SIGNALS)  # held since the fork (`_signals_held`)
    _die_with(parent)
    if forked:
        # What the fork copied is the parent's: the collector never visits it here, so no finalizer of the parent's
        # garbage runs in this worker (the llama-index peer's waited here for a thread only its parent has); and,
        # as the gc module's docs say of fork, collections no longer write to the copied objects' pages.
        gc.freeze()
    factory = build(spec)
    _worker = (factory, options, shared, tally)
    # Closed when the worker exits (multiprocessing runs its finalizers then), as one process closes its runtimes
    # after the replay: a SQLite store left open kept the run's rows in the -wal file beside the database.
    multiprocessing.util.Finalize(None, close_store, args=(factory,), exitpriority=0)  # `Runtimes.close`, if any
    if forked:
        _one_torch_thread()  # after `build`: an embedder built there may set torch's threads


@contextlib.contextmanager
def _signals_held() -> Iterator[None]:
    """SIGINT and SIGTERM held (blocked in this thread) while it starts the workers, which start with them held
    (a process inherits the mask of the thread that made it) and let them in once their own handlers are set.

    A Ctrl-C or a SIGTERM as a replay started its workers ran the parent's handler in a worker not yet started
    (`memlab run`'s SIGTERM handler raises, as Ctrl-C does): a traceback per worker under the run's one line. One
    that came to this process meanwhile is raised here when the block ends.
    """
    held = signal.pthread_sigmask(signal.SIG_BLOCK, WORKER_SIGNALS)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, held)


def _die_with(parent: int) -> None:
    """On Linux, have the kernel kill this worker when the run's process dies (kill -9, SIGTERM, a crash).

    Without it a killed run's workers went on replaying, writing into the store and holding its connections
    (and a SQLite -wal file) until killed one by one. Elsewhere a worker outlives its parent as before.
    """
    if not sys.platform.startswith("linux"):
        return
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent:  # the parent died before the request took effect
        os._exit(1)


def _one_torch_thread() -> None:
    """In a worker forked from a parent that loaded torch, keep torch to one intra-op thread.

    The OpenMP threads torch starts on its first parallel operation do not survive a fork, and the child's next
    parallel operation waits for them forever (a sweep that replayed `embedder=minilm` in its own process, then
    forks for a job with several dialogues, hung); with one thread torch never enters a parallel region.
    """
    torch = sys.modules.get("torch")  # loaded by the parent (or by `build`): never imported here
    if torch is not None:
        torch.set_num_threads(1)


def _replay(chain: list[Dialogue], last: list[bool]) -> list[tuple[list[Record], Any]]:
    """Each dialogue of `chain` replayed in turn: its records, and what `Shared.take` returned after it.

    After a dialogue whose `last` is true (its user's last of the replay), the components hear `on_user_end`.
    """
    assert _worker is not None, "the worker was not started"
    make_runtime, options, shared, tally = _worker
    out = []
    for dialogue, ends in zip(chain, last, strict=True):
        runtime = make_runtime(dialogue)
        records = list(tallied(replay_dialogue(dialogue, runtime, options), tally))
        if ends:
            end_user(runtime, dialogue.user_id)
        out.append((records, shared.take() if shared else None))
    return out


def chains(dialogues: Sequence[Dialogue], key: Callable[[Dialogue], Hashable] | None) -> list[list[int]]:
    """The dialogues' positions grouped by `key`, each group in input order, the groups by their first dialogue.

    Args:
        dialogues: The dialogues of a replay.
        key: What ties dialogues together (a user's id); None: every dialogue alone.
    """
    if key is None:
        return [[i] for i in range(len(dialogues))]
    groups: dict[Hashable, list[int]] = {}
    for i, dialogue in enumerate(dialogues):
        groups.setdefault(key(dialogue), []).append(i)
    return list(groups.values())


def simulate_parallel(
    dialogues: Sequence[Dialogue],
    build: Callable[[Any], RuntimeFactory],
    spec: Any,
    workers: int,
    options: ReplayOptions,
    shared: Shared | None = None,
    tally: Any = None,
    groups: Sequence[Sequence[int]] | None = None,
) -> Generator[list[Record], None, None]:
    """Each dialogue's records, in dialogue order, replayed by `workers` processes.

    The dialogues of one of `groups` (`chains`: a user's, when a component keeps user state) replay one after
    another in one worker, in input order, as one process would replay them; each group in any worker.

    `build(spec)` makes the runtime factory in each worker; both must be picklable (a module-level
    function and a config). `tally` (`memlab.sim.progress.new_tally()`, inherited by the workers)
    counts the simulated calls and probes as they happen, for a heartbeat. Processes are
    forked where the platform allows it (no re-import); a forked worker runs torch, if the parent loaded it, on
    one thread (`_one_torch_thread`), leaves what it inherited to the parent's collector (`gc.freeze`), and
    closes what its runtime factory built when it exits (stores, connections), as one process does.
    Interrupted (Ctrl-C) or abandoned, it stops the workers at once: the queued dialogues are
    dropped and the running ones terminated, where leaving the pool would wait for all of them.

    Args:
        dialogues: The dialogues to replay.
        build: Makes the runtime factory from `spec` in each worker (picklable).
        spec: What `build` reads (a config; picklable).
        workers: Worker processes.
        options: What the replay does besides replaying.
        shared: State handed back from the workers (None: none).
        tally: Counts calls and probes for the heartbeat (None: none).
        groups: Positions of the dialogues each worker task replays in turn (None: every dialogue alone).
    """
    methods = multiprocessing.get_all_start_methods()
    context = multiprocessing.get_context("fork" if "fork" in methods else "spawn")
    initargs = (build, spec, options, shared, tally, context.get_start_method() == "fork", os.getpid())
    pool = ProcessPoolExecutor(workers, mp_context=context, initializer=_start, initargs=initargs)
    finished = False
    try:
        groups = chains(dialogues, None) if groups is None else groups
        ends = user_ends(dialogues)
        with _signals_held():  # the workers start on the first submit (each submit, where they are spawned)
            pending = {
                g: pool.submit(_replay, [dialogues[i] for i in group], [i in ends for i in group])
                for g, group in enumerate(groups)
            }
        group_of = {i: g for g, group in enumerate(groups) for i in group}
        ready: dict[int, tuple[list[Record], Any]] = {}  # replayed, not yet yielded (a group ahead of its turn)
        for i in range(len(dialogues)):
            if i not in ready:
                g = group_of[i]
                ready.update(zip(groups[g], pending.pop(g).result(), strict=True))
            records, taken = ready.pop(i)
            if shared is not None:
                shared.give(taken)
            yield records
        finished = True
    finally:
        if finished:
            pool.shutdown(wait=True, cancel_futures=True)
        else:
            stop_now(pool)


def stop_now(pool: ProcessPoolExecutor) -> None:
    """Terminate the pool's workers, drop its queued work and shut it down, without waiting for either.

    ProcessPoolExecutor has no public way to stop running work before Python 3.14 (`terminate_workers`).
    A worker terminated while it sends a result leaves part of a message in the pool's result pipe, and the
    pool's manager thread would wait for the rest for ever, and `shutdown` with it (seen: a test that abandons
    a replay hung for an hour on a loaded machine). Once the workers are gone the parent's end of that pipe is
    closed too: the thread then reads the pipe's end, finds the pool broken and stops.

    Args:
        pool: A pool whose workers may be running.
    """
    processes = list((getattr(pool, "_processes", None) or {}).values())
    for process in processes:
        process.terminate()
    for process in processes:
        process.join(STOP_GRACE_S)
        if process.is_alive():
            process.kill()
            process.join()
    results = getattr(pool, "_result_queue", None)
    if results is not None:
        results._writer.close()
    pool.shutdown(wait=True, cancel_futures=True)
