"""Progress of a replay, counted in model calls (the unit of work), on a terminal or in a log.

On a terminal: a tqdm bar of calls. Elsewhere (CI, a batch job, `nohup`): one log line every
`HEARTBEAT_S` seconds, so a long run shows it is alive. `sim.progress=false` silences both,
`true` forces the bar.
"""

from __future__ import annotations

import logging
import os
import sys
import time
from collections.abc import Iterable, Iterator, Sequence

from memlab.dialogues.model import Dialogue
from memlab.sim import CallRecord, ReplayOptions
from memlab.sim.records import Record

HEARTBEAT_S = 30.0
log = logging.getLogger("memlab.progress")


def expected_calls(dialogues: Sequence[Dialogue], options: ReplayOptions) -> int:
    """How many model calls the replay will make: one per message of a calling role."""
    return sum(1 for d in dialogues for m in d.messages() if m.role in options.call_roles)


def track(records: Iterable[Record], total: int, desc: str, enabled: bool | None) -> Iterator[Record]:
    """Pass `records` through, reporting the calls among them as they come."""
    on_terminal = sys.stderr.isatty() and not os.environ.get("CI")
    if enabled is False:
        yield from records
        return
    if enabled or on_terminal:
        from tqdm import tqdm

        with tqdm(total=total, desc=desc, unit="call", leave=False) as bar:
            for record in records:
                if isinstance(record, CallRecord):
                    bar.update()
                yield record
        return
    done, start = 0, time.monotonic()
    last = start
    for record in records:
        if isinstance(record, CallRecord):
            done += 1
            now = time.monotonic()
            if now - last >= HEARTBEAT_S:
                last = now
                log.info("%s: %d/%d calls, %.0f s", desc, done, total, now - start)
        yield record
