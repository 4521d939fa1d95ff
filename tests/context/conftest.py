"""Context-layer fixtures: the real corpora as message lists, and chat models that fail on purpose."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from memlab.dialogues import Dialogue, load_locomo, load_tau_bench
from memlab.llm import Completion, LLMError
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
