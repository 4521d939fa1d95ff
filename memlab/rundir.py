"""A run directory, published whole: results are staged beside it and moved in at the end.

A run that fails never leaves a half-written `metrics.json`: either every file is there or none.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from memlab.dialogues.model import Dialogue

MANIFEST_PACKAGES = ("memlab", "hydra-core", "numpy", "pandas", "scikit-learn", "tiktoken", "litellm")
FLOAT_DIGITS = 6


def canonical_json(data: Any) -> str:
    """Sorted keys, rounded floats, trailing newline: the same data gives the same bytes."""

    def norm(x: Any) -> Any:
        if isinstance(x, float):
            return round(x, FLOAT_DIGITS)
        if isinstance(x, Mapping):
            return {str(k): norm(v) for k, v in x.items()}
        if isinstance(x, list | tuple):
            return [norm(v) for v in x]
        return x

    return json.dumps(norm(data), sort_keys=True, indent=2, ensure_ascii=False) + "\n"


def data_hash(dialogues: Iterable[Dialogue]) -> str:
    """sha256 over every replayed message and probe, independent of the source file's layout."""
    h = hashlib.sha256()
    for d in dialogues:
        h.update(f"dialogue\0{d.id}\0{d.system_prompt or ''}\0".encode())
        for m in d.messages():
            h.update(json.dumps([m.id, m.role, m.speaker, m.content, [c.to_openai() for c in m.tool_calls]]).encode())
        for p in d.probes:
            h.update(json.dumps([p.id, p.question, p.answer, list(p.evidence), p.category]).encode())
    return h.hexdigest()


def git_revision(start: Path) -> str | None:
    """The checkout's commit, or None outside a git checkout."""
    try:
        out = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=start, capture_output=True, text=True, check=True, timeout=5
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None


def versions() -> dict[str, str | None]:
    found: dict[str, str | None] = {}
    for name in MANIFEST_PACKAGES:
        try:
            found[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            found[name] = None
    return found


def publish(run_dir: Path, files: Mapping[str, str | bytes]) -> Path:
    """Write `files` into a staging folder next to `run_dir`, then move them in together."""
    run_dir.mkdir(parents=True, exist_ok=True)
    stage = Path(tempfile.mkdtemp(prefix=".staging-", dir=run_dir.parent))
    try:
        for name, content in files.items():
            target = stage / name
            target.parent.mkdir(parents=True, exist_ok=True)
            if isinstance(content, bytes):
                target.write_bytes(content)
            else:
                target.write_text(content, encoding="utf-8")
        for entry in sorted(stage.iterdir()):
            os.replace(entry, run_dir / entry.name)
    finally:
        shutil.rmtree(stage, ignore_errors=True)
    return run_dir
