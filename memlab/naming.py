"""Folder names that say what a run is: ``3_context=summarize,max_tokens=1000`` rather than ``3``.

`job_name` turns a job's command-line overrides into a short, file-system-safe suffix; the
config uses it through the ``memlab_name`` resolver for run folders (after the time) and the
``memlab_job`` resolver for sweep job folders: the job number (which keeps them unique and in
order), then the overrides of what the sweep varies, read from the `multirun.yaml` that Hydra's
sweeper writes into the sweep folder before any job starts. `folder_token` (the ``memlab_token``
resolver) ends a sweep folder's name after its time, so that two sweeps started in the same
second, in two processes or on two machines writing one folder, never share it.
"""

from __future__ import annotations

import copy
import functools
import hashlib
import io
import re
import secrets
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from omegaconf import OmegaConf

if TYPE_CHECKING:
    from hydra.core.override_parser.types import Override

MAX_CHARS = 64  # longer names keep the whole overrides that fit and end in a hash of the whole
NOISE = ("output_dir", "hydra.", "debug", "sim.progress")  # overrides that say nothing about the configuration
UNSAFE = re.compile(r"[^\w.=,+@-]+")
TOKEN_BYTES = 4  # 8 hex digits: two sweeps of the same second share a folder once in 4.3 billion
MULTIRUN_FILE = "multirun.yaml"  # the sweep's config, which Hydra's sweepers write into its folder first


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
    if len(name) <= MAX_CHARS:
        return name
    kept = name[: MAX_CHARS - 9]
    comma = kept.rfind(",")
    if name[len(kept)] != "," and comma >= len(kept) // 2:  # end after the last whole override, not in a value
        kept = kept[:comma]
    return f"{kept}-{hashlib.sha256(name.encode()).hexdigest()[:8]}"


def folder_token() -> str:
    """A random suffix for a folder name (from the OS, never the run's seeded generators): ``3f9a2c1e``."""
    return secrets.token_hex(TOKEN_BYTES)


def sweep_settings(sweep_dir: Path) -> dict[str, Any] | None:
    """The ``hydra`` section of the sweep folder's multirun.yaml, unresolved (None without one).

    Each text of the file is parsed once (every job's folder name reads it, and it holds the sweep's whole
    config); the file is read on every call, so a rewritten one is never served stale. Each caller gets its own copy.
    """
    path = Path(sweep_dir) / MULTIRUN_FILE
    if not path.is_file():
        return None
    return copy.deepcopy(_sweep_settings(path.read_text(encoding="utf-8")))


@functools.lru_cache(maxsize=8)
def _sweep_settings(text: str) -> dict[str, Any]:
    loaded = OmegaConf.to_container(OmegaConf.load(io.StringIO(text)), resolve=False)
    hydra = loaded.get("hydra") if isinstance(loaded, dict) else None
    return hydra if isinstance(hydra, dict) else {}


def sweep_overrides(hydra: dict[str, Any]) -> list[Override]:
    """A sweep's overrides as Hydra's basic sweeper combines them: ``hydra.sweeper.params`` (a named
    experiment's sweep), then the command line's, a later one of the same key replacing the earlier."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    params = [f"{key}={value}" for key, value in ((hydra.get("sweeper") or {}).get("params") or {}).items()]
    task = [str(o) for o in (hydra.get("overrides") or {}).get("task") or ()]
    final = {o.get_key_element(): o for o in OverridesParser.create().parse_overrides([*params, *task])}
    return list(final.values())


def _key(override: str) -> str:
    return override.lstrip("+~").partition("=")[0]


def _resolver(prefix: str, overrides: Sequence[str]) -> str:
    name = job_name(list(overrides))
    return f"{prefix}_{name}" if name else str(prefix)


def _job_resolver(number: int, overrides: Sequence[str], sweep_dir: str) -> str:
    """``3_context=trim,max_tokens=1000``: the job's number, then its values of the keys the sweep varies
    (every override when the sweep folder has no multirun.yaml, as on a remote launcher's worker)."""
    hydra = sweep_settings(Path(sweep_dir))
    if hydra is not None:
        varied = {o.get_key_element().lstrip("+~") for o in sweep_overrides(hydra) if o.is_sweep_override()}
        overrides = [o for o in overrides if _key(str(o)) in varied] or overrides
    return _resolver(str(number), overrides)


def register_resolver() -> None:
    """``${memlab_name:PREFIX,${hydra.overrides.task}}``: PREFIX, then the job's name if it has one;
    ``${memlab_job:${hydra.job.num},${hydra.overrides.task},${hydra.sweep.dir}}``: a sweep job's folder;
    ``${memlab_token:}``: `folder_token`, drawn once per config like Hydra's ``${now:...}`` (the value is
    cached in the config, and Hydra copies that cache into every job's config and launcher worker)."""
    if not OmegaConf.has_resolver("memlab_name"):
        OmegaConf.register_new_resolver("memlab_name", _resolver)
    if not OmegaConf.has_resolver("memlab_job"):
        OmegaConf.register_new_resolver("memlab_job", _job_resolver)
    if not OmegaConf.has_resolver("memlab_token"):
        OmegaConf.register_new_resolver("memlab_token", folder_token, use_cache=True)
