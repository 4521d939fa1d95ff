"""Context-layer fixtures: the real corpora as message lists, and chat models that fail on purpose."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from memlab.llm import Completion, LLMError
from memlab.messages import Message, MessageLike, as_messages


def _locomo(path: Path) -> list[list[Message]]:
    """Each LoCoMo conversation as one message list: speaker_a is `user`, speaker_b `assistant`."""
    out = []
    for sample in json.loads(path.read_text()):
        conv = sample["conversation"]
        keys = sorted(
            (k for k in conv if k.startswith("session_") and isinstance(conv[k], list)), key=lambda k: int(k[8:])
        )
        msgs = [
            Message(
                role="user" if turn["speaker"] == conv["speaker_a"] else "assistant",
                content=turn["text"],
                id=turn["dia_id"],
                speaker=turn["speaker"],
            )
            for k in keys
            for turn in conv[k]
        ]
        out.append(msgs)
    return out


def _tau_bench(path: Path) -> list[list[Message]]:
    """Each tau-bench trajectory as OpenAI messages, ids ``<task>/<trial>:<index>``."""
    return [
        [Message.from_openai(m, id=f"{t['task_id']}/{t['trial']}:{i}") for i, m in enumerate(t["traj"])]
        for t in json.loads(path.read_text())
    ]


@pytest.fixture(scope="session")
def locomo(locomo_path: Path) -> list[list[Message]]:
    return _locomo(locomo_path)


@pytest.fixture(scope="session")
def tau_bench(tau_bench_path: Path) -> list[list[Message]]:
    return _tau_bench(tau_bench_path)


class FailingChatModel:
    """A backend whose every call fails, as a provider outage would."""

    name = "failing"

    def __init__(self) -> None:
        self.calls = 0

    def complete(
        self, messages: Sequence[MessageLike], *, task: str = "chat", max_tokens: int | None = None, **params: Any
    ) -> Completion:
        self.calls += 1
        raise LLMError("provider unavailable")


class FixedChatModel:
    """A backend that answers every call with `text` (an overlong or empty "summary") and keeps the requests."""

    name = "fixed"

    def __init__(self, text: str) -> None:
        self.text = text
        self.requests: list[list[Message]] = []

    def complete(
        self, messages: Sequence[MessageLike], *, task: str = "chat", max_tokens: int | None = None, **params: Any
    ) -> Completion:
        self.requests.append(as_messages(messages))
        return Completion(text=self.text, prompt_tokens=0, completion_tokens=0, model=self.name)


@pytest.fixture
def failing_model() -> FailingChatModel:
    return FailingChatModel()


@pytest.fixture
def fixed_model() -> type[FixedChatModel]:
    return FixedChatModel
