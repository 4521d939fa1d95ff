"""The replay simulator: dialogues in, records out."""

from memlab.sim.parallel import Shared, chains, simulate_parallel
from memlab.sim.records import CallRecord, LifecycleRecord, ProbeRecord, Record
from memlab.sim.replay import CLOCK_TICK, Cursor, ReplayOptions, replay_dialogue, simulate, user_ends

__all__ = [
    "CLOCK_TICK",
    "CallRecord",
    "Cursor",
    "LifecycleRecord",
    "ProbeRecord",
    "Record",
    "ReplayOptions",
    "Shared",
    "chains",
    "replay_dialogue",
    "simulate",
    "simulate_parallel",
    "user_ends",
]
