"""Where a run is, in a log: a heartbeat line every `sim.heartbeat_seconds` (30 s by default).

On a terminal tqdm draws a bar (`memlab.experiment`); a CI log or `nohup` saw nothing between a
sweep's job-end lines for 30 minutes. A thread writes one line to the `memlab.progress` logger
(stderr off a terminal, and run.log) at each beat: which run (a sweep's job), its phase, the
simulated calls and probes done, calls per second, the dialogues and sessions done of the run's, the
replay's time left at its pace so far (from the sessions done: sessions differ in length, so an
estimate) and the time elapsed. Replay workers add to a shared tally, so the line moves while a long
dialogue is still being replayed.

>>> beat = Heartbeat("job 3 (context=trim)", None, dialogues=7, sessions=140)
>>> beat.phase = "replay"
>>> beat.done[CALLS], beat.done[SESSIONS] = 1234, 35
>>> for part in beat.line(elapsed=95.0, replay_s=30.0).split(", "):
...     print(part)
job 3 (context=trim): replay: 1,234 calls (41.1/s)
0 probes
0 of 7 dialogues
35 of 140 sessions done
about 1 min 30 s of replay left
1 min 35 s elapsed
"""

from __future__ import annotations

import logging
import multiprocessing
import threading
import time
from collections.abc import Iterable, Iterator
from types import TracebackType
from typing import Any

from memlab.sim.records import CallRecord, LifecycleRecord, ProbeRecord, Record
from memlab.trace import PROGRESS_LOGGER

DEFAULT_HEARTBEAT_S = 30.0
CALLS, PROBES, SESSIONS = 0, 1, 2  # the places in a tally
# A progress line stderr shows beside a bar too, unless sim.progress=false (heartbeat lines are INFO: no bar only).
NOTICE = logging.INFO + 5
logging.addLevelName(NOTICE, "NOTICE")
log = logging.getLogger(PROGRESS_LOGGER)
log.propagate = False  # a run attaches its handlers (run.log, stderr); Hydra's console must not print it again


def duration(seconds: float) -> str:
    """`95.0` -> ``1 min 35 s``; `4000` -> ``1 h 6 min``."""
    s = int(seconds)
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min {s % 60} s"
    return f"{s // 3600} h {s % 3600 // 60} min"


def new_tally() -> Any:
    """Calls, probes and sessions done, shared with the replay workers (which inherit it)."""
    return multiprocessing.Array("q", 3)


def _place(record: Record) -> int | None:
    """Where `record` counts in a tally, if anywhere."""
    if isinstance(record, CallRecord):
        return CALLS
    if isinstance(record, ProbeRecord):
        return PROBES
    return SESSIONS if isinstance(record, LifecycleRecord) and record.kind == "session.end" else None


def tallied(records: Iterable[Record], tally: Any) -> Iterator[Record]:
    """`records` as they come, each call, probe and finished session added to `tally` (None: not counted)."""
    for record in records:
        place = _place(record)
        if tally is not None and place is not None:
            with tally.get_lock():
                tally[place] += 1
        yield record


class Heartbeat:
    """A thread logging `line()` every `interval_s` seconds (None: never) while the block runs.

    The replay sets `phase`, tallies calls, probes and sessions in `done` (workers inherit it) and
    finished dialogues in `dialogues_done`; `dialogues` and `sessions` are the run's (0: not known yet; `sessions`
    those a replay stops after, with `sim.stop_after_session`).
    """

    def __init__(self, label: str, interval_s: float | None, dialogues: int = 0, sessions: int = 0) -> None:
        self.label, self.interval_s, self.dialogues, self.sessions = label, interval_s, dialogues, sessions
        self.done = new_tally()
        self.dialogues_done = self._sessions_before = 0
        self.phase = "loading data"
        self._start = self._replay_start = time.monotonic()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def __enter__(self) -> Heartbeat:
        if self.interval_s is not None:
            self._thread = threading.Thread(target=self._beat, name="memlab-heartbeat", daemon=True)
            self._thread.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()

    def replaying(self, dialogues_done: int = 0, sessions_done: int = 0) -> None:
        """The replay starts now (a resumed one with these done before): its pace is measured from here."""
        self.phase, self._replay_start = "replay", time.monotonic()
        self.dialogues_done, self.done[SESSIONS] = dialogues_done, sessions_done
        self._sessions_before = sessions_done

    def count(self, records: Iterable[Record], *, tally: bool = True) -> Iterator[Record]:
        """`records` as they come: finished dialogues counted, and calls and probes unless workers tallied them."""
        for record in tallied(records, self.done if tally else None):
            if isinstance(record, LifecycleRecord) and record.kind == "dialogue.end":
                self.dialogues_done += 1
            yield record

    def line(self, elapsed: float | None = None, replay_s: float | None = None) -> str:
        """Where the run is: phase, calls and probes done, calls per second, dialogues and sessions done of the
        run's, the replay's time left at its pace so far, time elapsed."""
        now, calls, probes, sessions = time.monotonic(), self.done[CALLS], self.done[PROBES], self.done[SESSIONS]
        elapsed = now - self._start if elapsed is None else elapsed
        replay_s = now - self._replay_start if replay_s is None else replay_s
        replaying = self.phase == "replay" and replay_s > 0
        rate = f" ({calls / replay_s:,.1f}/s)" if replaying else ""
        counts = [f"{self.dialogues_done:,} of {self.dialogues:,} dialogues"] if self.dialogues else []
        if self.sessions:
            counts.append(f"{sessions:,} of {self.sessions:,} sessions")
        done = f", {', '.join(counts)} done" if counts else ""
        paced = sessions - self._sessions_before  # the sessions this replay did, in `replay_s`
        if replaying and paced > 0 and sessions < self.sessions:
            done += f", about {duration(replay_s * (self.sessions - sessions) / paced)} of replay left"
        return (
            f"{self.label}: {self.phase}: {calls:,} calls{rate}, {probes:,} probes{done}, {duration(elapsed)} elapsed"
        )

    def _beat(self) -> None:
        assert self.interval_s is not None
        beats = 0
        while True:
            beats += 1
            # On a schedule from the start, so the gaps never drift past the interval.
            if self._stop.wait(self._start + beats * self.interval_s - time.monotonic()):
                return
            log.info(self.line())
