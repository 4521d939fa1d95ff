"""OpenAI-format JSONL: one conversation per line, ``{"messages": [...]}``, for users' own logs."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from memlab.dialogues.model import Dialogue, Session
from memlab.errors import DatasetError
from memlab.messages import Message


@dataclass
class JsonlConfig:
    _target_: str = "memlab.dialogues.load_jsonl"
    path: str = "datasets/sample.jsonl"


def load_jsonl(path: str | Path) -> list[Dialogue]:
    """Each line a dialogue of one session; message ids are ``L<line>:<index>``."""
    path = Path(path)
    dialogues = []
    with path.open(encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            try:
                raw = json.loads(line)
            except json.JSONDecodeError as e:
                raise DatasetError(f"{path}:{lineno}: not JSON ({e.msg} at column {e.colno})") from None
            msgs = tuple(Message.from_openai(m, id=f"L{lineno}:{i}") for i, m in enumerate(raw["messages"]))
            system = msgs[0].text if msgs and msgs[0].role == "system" else None
            body = msgs[1:] if system is not None else msgs
            dialogues.append(Dialogue(id=f"line-{lineno}", sessions=(Session("S1", body),), system_prompt=system))
    return dialogues
