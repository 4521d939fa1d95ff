"""Context-layer fixtures: the real corpora as message lists, and chat models that fail on purpose."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

from memlab.dialogues import Dialogue, load_locomo, load_tau_bench
from memlab.llm import Completion, ExtractiveChatModel, FaultyChatModel
from memlab.messages import Message, MessageLike, as_messages, system


def _as_request(d: Dialogue) -> list[Message]:
    """A dialogue as one message list, its system prompt (tau-bench's policy) first."""
    return ([system(d.system_prompt)] if d.system_prompt else []) + list(d.messages())


@pytest.fixture(scope="session")
def locomo(locomo_path: Path) -> list[list[Message]]:
    """Each LoCoMo conversation as one message list (speaker_a is `user`, speaker_b `assistant`)."""
    return [_as_request(d) for d in load_locomo(locomo_path)]


@pytest.fixture(scope="session")
def tau_bench(tau_bench_path: Path) -> list[list[Message]]:
    """Each tau-bench trajectory as the OpenAI messages it was: policy, turns, tool calls and results."""
    return [_as_request(d) for d in load_tau_bench(tau_bench_path)]


def faulty(mode: str) -> FaultyChatModel:
    """The lab's fault injector failing every call in `mode` (error, timeout, empty, long)."""
    return FaultyChatModel(ExtractiveChatModel(), rate=1.0, modes=[mode])


@pytest.fixture
def failing_model() -> FaultyChatModel:
    return faulty("error")


@pytest.fixture
def faulty_model() -> Callable[[str], FaultyChatModel]:
    return faulty


class RecordingChatModel:
    """A backend that answers every call with `text` and keeps each request, to see what a strategy sent."""

    name = "recording"

    def __init__(self, text: str) -> None:
        self.text = text
        self.requests: list[list[Message]] = []

    def complete(
        self, messages: Sequence[MessageLike], *, task: str = "chat", max_tokens: int | None = None, **params: Any
    ) -> Completion:
        self.requests.append(as_messages(messages))
        return Completion(text=self.text, prompt_tokens=0, completion_tokens=0, model=self.name)


@pytest.fixture
def recording_model() -> type[RecordingChatModel]:
    return RecordingChatModel
