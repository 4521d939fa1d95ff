"""Dataset loaders (LoCoMo, LongMemEval, tau-bench, OpenAI JSONL) and the synthetic generator -> `Dialogue`s."""

from memlab.dialogues.jsonl import load_jsonl
from memlab.dialogues.locomo import LifeEvent, LocomoMetadata, Observation, load_locomo
from memlab.dialogues.longmemeval import load_longmemeval
from memlab.dialogues.model import Dialogue, Probe, Session
from memlab.dialogues.source import resolve_path
from memlab.dialogues.synthetic import PlantedFact, generate_synthetic
from memlab.dialogues.tau_bench import load_tau_bench

__all__ = [
    "Dialogue",
    "LifeEvent",
    "LocomoMetadata",
    "Observation",
    "PlantedFact",
    "Probe",
    "Session",
    "generate_synthetic",
    "load_jsonl",
    "load_locomo",
    "load_longmemeval",
    "load_tau_bench",
    "resolve_path",
]
