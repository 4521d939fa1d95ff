"""memlab: a benchmark and simulation lab for LLM agents' context and memory strategies."""

from memlab.api import compose, run

__version__ = "0.1.0"
__all__ = ["compose", "run"]
