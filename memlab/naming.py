"""Folder names that say what a run is: ``3_context=summarize,max_tokens=1000`` rather than ``3``.

`job_name` turns a job's command-line overrides into a short, file-system-safe suffix; the
config uses it through the ``memlab_name`` resolver for run folders (after the time) and sweep
job folders (after the job number, which keeps them unique and in order).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence

from omegaconf import OmegaConf

MAX_CHARS = 64  # longer names end in a hash of the whole
NOISE = ("output_dir", "hydra.", "debug", "sim.progress")  # overrides that say nothing about the configuration
UNSAFE = re.compile(r"[^\w.=,+@-]+")


def job_name(overrides: Sequence[str]) -> str:
    """``context=trim,max_tokens=1000`` from ``["context=trim", "context.max_tokens=1000"]``.

    Keys lose their path where the last part is unambiguous, paths keep only their file name.

    >>> job_name(["context=trim", "context.max_tokens=1000", "dataset.path=/data/x.json", "output_dir=/tmp/r"])
    'context=trim,max_tokens=1000,path=x.json'
    """
    pairs = []
    for text in overrides:
        key, _, value = str(text).lstrip("+~").partition("=")
        if not key.startswith(NOISE):
            pairs.append((key, value.rstrip("/").rsplit("/", 1)[-1] if "/" in value else value))
    leaves = [k.rsplit(".", 1)[-1] for k, _ in pairs]
    parts = [
        f"{leaf if leaves.count(leaf) == 1 else key}={value}" for (key, value), leaf in zip(pairs, leaves, strict=True)
    ]
    name = UNSAFE.sub("_", ",".join(parts)).strip("_")
    if len(name) > MAX_CHARS:
        name = f"{name[: MAX_CHARS - 9]}-{hashlib.sha256(name.encode()).hexdigest()[:8]}"
    return name


def _resolver(prefix: str, overrides: Sequence[str]) -> str:
    name = job_name(list(overrides))
    return f"{prefix}_{name}" if name else str(prefix)


def register_resolver() -> None:
    """``${memlab_name:PREFIX,${hydra.overrides.task}}``: PREFIX, then the job's name if it has one."""
    if not OmegaConf.has_resolver("memlab_name"):
        OmegaConf.register_new_resolver("memlab_name", _resolver)
