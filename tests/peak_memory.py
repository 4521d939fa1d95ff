"""`memlab ARGS` in a fresh interpreter, and the peak memory and CPU seconds of that run alone.

A child's `ru_maxrss` is no such measure: Linux carries a process's peak resident set over fork and exec,
so every child a pytest worker starts reports at least that worker's own peak (`make bench` measured a
338 MiB run as 1.6 GB after the long-term scale benchmarks had grown its process). The child reports
instead its own ``VmHWM`` (the peak of the memory it has mapped since its exec) and its children's
`ru_maxrss` (the replay workers it forks, which start from its own memory, not the worker's).
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

_MEASURED_RUN = """
import resource, sys
from memlab import cli
try:
    cli.main(sys.argv[1:])
except SystemExit as e:
    assert not e.code, e.code
kids = resource.getrusage(resource.RUSAGE_CHILDREN)
own = resource.getrusage(resource.RUSAGE_SELF)
hwm = next(int(line.split()[1]) for line in open("/proc/self/status") if line.startswith("VmHWM:"))
print(max(hwm, kids.ru_maxrss), own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime)
"""


@dataclass(frozen=True)
class Measured:
    """A run's peak resident set (the larger of its process's and its replay workers') and CPU s (user + sys)."""

    peak_kib: int
    cpu_s: float

    @property
    def peak_mib(self) -> float:
        return self.peak_kib / 1024


def measured_run(args: list[str], cwd: Path | None = None, env: Mapping[str, str] | None = None) -> Measured:
    """`memlab ARGS` (``run ...``) in a fresh interpreter; fails with its stderr's end if it does not exit 0."""
    done = subprocess.run(
        [sys.executable, "-c", _MEASURED_RUN, *args],
        cwd=cwd,
        env=dict(os.environ if env is None else env),
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    peak, cpu = done.stdout.split()[-2:]
    return Measured(int(peak), float(cpu))
