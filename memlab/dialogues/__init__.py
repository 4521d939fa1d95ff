"""Dataset loaders and the synthetic generator; all return `Dialogue`s."""

from memlab.dialogues.jsonl import JsonlConfig, load_jsonl
from memlab.dialogues.model import Dialogue, Probe, Session

SCHEMAS = {("dataset", "jsonl"): JsonlConfig}

__all__ = ["SCHEMAS", "Dialogue", "Probe", "Session", "load_jsonl"]
