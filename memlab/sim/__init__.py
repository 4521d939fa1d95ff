"""The replay simulator: dialogues in, records out."""

from memlab.sim.records import CallRecord, LifecycleRecord, ProbeRecord, Record
from memlab.sim.replay import CLOCK_TICK, Cursor, ReplayOptions, replay_dialogue, simulate

__all__ = [
    "CLOCK_TICK",
    "CallRecord",
    "Cursor",
    "LifecycleRecord",
    "ProbeRecord",
    "Record",
    "ReplayOptions",
    "replay_dialogue",
    "simulate",
]
