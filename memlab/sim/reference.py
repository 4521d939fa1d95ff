"""The reference workload, timed throughout a replay so that latencies can be read against the machine's speed.

Latencies in microseconds move with the machine and with its load at the time. A fixed workload
timed in the replaying processes, at session ends spread over the run (at most one sample every
`REFERENCE_EVERY_S` seconds per process, so it costs about 0.2% of the time), sees the same load
as the steps it is compared with; `memlab compare --latency` reads latencies as ratios to the
median of its samples (`latency.reference_us`). Timed five times at the end of the run instead,
it caught whatever load that moment had: 3.3 to 11.6 ms over four unchanged runs on a loaded
2-core machine, while the steps' medians moved by at most 1.4x.

The workload tokenizes with o200k_base, the lab's default tokenizer (`tokenizer`: gpt-4o-mini's), so a
run on the default tokenizer loads one encoding (each costs ~0.25 s to load); it was cl100k_base before
issue 29, so `latency.reference_us` of older runs timed another encoding.
"""

from __future__ import annotations

import time

from memlab.tokens import load_encoding
from memlab.trace import LATENCY_REFERENCE, emit

REFERENCE_ENCODING = "o200k_base"

REFERENCE_TEXTS = 50  # about 0.8 ms on an idle 2-core machine
REFERENCE_EVERY_S = 0.5
_TEXTS = tuple(
    f"reference message {i}: the quick brown fox jumps over the lazy dog. " * 4 for i in range(REFERENCE_TEXTS)
)


def reference_us() -> float:
    """Microseconds this process takes for the fixed workload now: tokenizing 50 short texts (`REFERENCE_ENCODING`).

    tiktoken's own `encode`, not a memlab counter: a counter keeps each short text's count, so every
    sample after a process's first timed 50 lookups (about 8 µs, not 450) and `compare --latency` read
    the steps of runs with several samples (summarizing ones) as dozens of times slower.
    """
    encode = load_encoding(REFERENCE_ENCODING).encode
    encode(_TEXTS[0])  # loaded and first used outside the timing (tiktoken's first call sets itself up)
    start = time.perf_counter_ns()
    for text in _TEXTS:
        encode(text)
    return (time.perf_counter_ns() - start) / 1000


class _Sampler:
    """This process's samples: the first session end, then one at least `REFERENCE_EVERY_S` after the last."""

    last: float | None = None

    def sample_if_due(self) -> None:
        now = time.monotonic()
        if self.last is None or now - self.last >= REFERENCE_EVERY_S:
            emit(LATENCY_REFERENCE, latency_us=reference_us())
            self.last = time.monotonic()


sample_reference = _Sampler().sample_if_due
