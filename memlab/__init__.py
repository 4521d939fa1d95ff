"""memlab: a benchmark and simulation lab for LLM agents' context and memory strategies."""

from __future__ import annotations

TYPE_CHECKING = False  # typing's, without importing typing: a completion TAB imports only what it uses
if TYPE_CHECKING:
    from typing import Any

    from memlab.api import compose, run
    from memlab.experiment import RunResult

__version__ = "0.1.0"


def __getattr__(name: str) -> Any:
    """`compose`, `run` and what `run` returns, imported on first use: the `memlab` command's completion imports
    no config code."""
    if name == "RunResult":
        from memlab import experiment

        return experiment.RunResult
    if name in __all__:
        from memlab import api

        return getattr(api, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    """The module's names with the lazy ones (`compose`, ...), which a notebook's completion offers before first use."""
    return sorted({*globals(), *__all__})


__all__ = ["RunResult", "compose", "run"]
