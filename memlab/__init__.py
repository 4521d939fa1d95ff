"""memlab: a benchmark and simulation lab for LLM agents' context and memory strategies."""

__version__ = "0.1.0"
