"""Helpers for the dataset tests: write small files, run the real CLI in a subprocess."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _write_json(path: Path, data: Any) -> Path:
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def _locomo_sample(sample_id: str = "conv-1", **conversation: Any) -> dict[str, Any]:
    """A minimal valid locomo10.json sample; `conversation` keys replace or add to its default."""
    conv: dict[str, Any] = {
        "speaker_a": "Ann",
        "speaker_b": "Bob",
        "session_1_date_time": "1:56 pm on 8 May, 2023",
        "session_1": [
            {"speaker": "Ann", "dia_id": "D1:1", "text": "Hi Bob!"},
            {"speaker": "Bob", "dia_id": "D1:2", "text": "Hi Ann, look at this.", "blip_caption": "a red kite"},
        ],
    }
    conv.update(conversation)
    return {
        "sample_id": sample_id,
        "conversation": conv,
        "qa": [{"question": "What did Bob show?", "answer": "a kite", "evidence": ["D1:2"], "category": 4}],
    }


@pytest.fixture
def run_cli():
    """Run `python -m memlab run ARGS` in `cwd` with this checkout's package first on the path."""

    def _run(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
        env = {**os.environ, "PYTHONPATH": str(ROOT), "CI": "1"}
        return subprocess.run(
            [sys.executable, "-m", "memlab", "run", *args],
            cwd=cwd,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )

    return _run


@pytest.fixture
def write_json():
    """`write_json(path, data) -> path`."""
    return _write_json


@pytest.fixture
def locomo_sample():
    """`locomo_sample(sample_id="conv-1", **conversation_keys) -> dict`: a minimal valid sample."""
    return _locomo_sample
