"""Structured configs of the `dataset` group: one per loader (validated by Hydra at start)."""

from __future__ import annotations

from dataclasses import dataclass

from memlab import ranges


@dataclass
class JsonlConfig:
    """`dataset=jsonl`: an OpenAI-format JSONL file (the shipped sample by default)."""

    _target_: str = "memlab.dialogues.load_jsonl"
    path: str = "datasets/sample.jsonl"
    """The OpenAI-format JSONL file; relative: from the working directory, else the project root."""
    max_dialogues: int | None = ranges.ranged(None, ge=1)
    """Read only the first N dialogues (null: all)."""


@dataclass
class LocomoConfig:
    """`dataset=locomo`: a `locomo10.json`-format file."""

    _target_: str = "memlab.dialogues.load_locomo"
    path: str = "datasets/locomo10.json"
    """The locomo10.json-format file; relative: from the working directory, else the project root."""
    max_dialogues: int | None = ranges.ranged(None, ge=1)
    """Read only the first N dialogues (null: all)."""
    sample_ids: list[str] | None = None
    """Read only these samples (`conv-26`, ...), in this order (null: all)."""
    categories: list[str] | None = None
    """Keep only probes of these categories (names or "1".."5"); null: all."""


@dataclass
class LongMemEvalConfig:
    """`dataset=longmemeval`: a LongMemEval file (longmemeval_s.json, longmemeval_m.json, longmemeval_oracle.json)."""

    _target_: str = "memlab.dialogues.load_longmemeval"
    path: str = "datasets/longmemeval_s.json"
    """The LongMemEval file; relative: from the working directory, else the project root."""
    max_dialogues: int | None = ranges.ranged(None, ge=1)
    """Read only the first N questions (null: all); the rest of the file is not parsed."""
    question_types: list[str] | None = None
    """Keep only questions of these types (single-session-user, ..., temporal-reasoning); null: all."""


@dataclass
class TauBenchConfig:
    """`dataset=tau_bench`: a tau-bench trajectory file."""

    _target_: str = "memlab.dialogues.load_tau_bench"
    path: str = "datasets/gpt-4o-airline.json"
    """The tau-bench trajectory file; relative: from the working directory, else the project root."""
    max_dialogues: int | None = ranges.ranged(None, ge=1)
    """Read only the first N dialogues (null: all)."""


@dataclass
class SyntheticConfig:
    """`dataset=synthetic`: the seeded generator (sizes chosen so the default run takes a second)."""

    _target_: str = "memlab.dialogues.generate_synthetic"
    seed: int = ranges.count(0)
    """The generator's random stream (any non-negative integer)."""
    dialogues: int = ranges.ranged(4, ge=1, le=100_000)
    """Dialogues generated (each one user)."""
    sessions: int = ranges.ranged(6, ge=1, le=1_000)
    """Sittings per dialogue."""
    turns_per_session: int = ranges.ranged(10, ge=1, le=10_000)
    """User turns per sitting."""
    facts: int = ranges.count(8, le=10_000)
    """Statements planted per dialogue, each asked about by a probe."""
    update_rate: float = ranges.rate(0.3)
    """Probability that a changeable fact is contradicted in a later session."""
    message_chars_mean: float = ranges.ranged(160.0, ge=1, le=100_000)
    """Mean message length in characters (lognormal)."""
    message_chars_sigma: float = ranges.ranged(0.6, ge=0, le=5)
    """Shape of the lognormal message length."""
    tool_call_rate: float = ranges.rate(0.15)
    """Share of assistant turns that call a tool."""
    tool_output_chars: float = ranges.ranged(3000.0, ge=1, le=1_000_000)
    """Mean length of a tool's output in characters (lognormal)."""
    tool_output_sigma: float = ranges.ranged(0.4, ge=0, le=5)
    """Shape of the lognormal tool-output length."""
    session_gap_days: float = ranges.ranged(7.0, ge=0, le=3_650)
    """Mean days between sessions (decay can be simulated)."""
    start: str = "2024-01-08T09:00:00"
    """The first session's time (ISO 8601)."""


SCHEMAS: dict[tuple[str, str], type] = {
    ("dataset", "jsonl"): JsonlConfig,
    ("dataset", "locomo"): LocomoConfig,
    ("dataset", "longmemeval"): LongMemEvalConfig,
    ("dataset", "tau_bench"): TauBenchConfig,
    ("dataset", "synthetic"): SyntheticConfig,
}
