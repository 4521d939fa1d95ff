"""memlab: a benchmark and simulation lab for LLM agents' context and memory strategies."""

from __future__ import annotations

TYPE_CHECKING = False  # typing's, without importing typing: a completion TAB imports only what it uses
if TYPE_CHECKING:
    from typing import Any

    from memlab.api import compose, run

__version__ = "0.1.0"


def __getattr__(name: str) -> Any:
    """`compose` and `run`, imported on first use: the `memlab` command's completion imports no config code."""
    if name in __all__:
        from memlab import api

        return getattr(api, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    """The module's names with `compose` and `run`, which a notebook's completion offers before their first use."""
    return sorted({*globals(), *__all__})


__all__ = ["compose", "run"]
