"""Shared helpers of the memory tests."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from memlab.llm import Completion, LLMError
from memlab.messages import Message, MessageLike, as_messages


class Scripted:
    """A chat model that answers with a fixed text, or fails, and keeps what it was asked."""

    name = "scripted"

    def __init__(self, reply: str | None) -> None:
        self.reply = reply
        self.asked: list[tuple[list[Message], str]] = []

    def complete(
        self, messages: Sequence[MessageLike], *, task: str = "chat", max_tokens: int | None = None, **params: Any
    ) -> Completion:
        self.asked.append((as_messages(messages), task))
        if self.reply is None:
            raise LLMError("provider down")
        return Completion(self.reply, 10, 3, self.name)


@pytest.fixture(scope="session")
def scripted() -> type[Scripted]:
    """A chat model with a fixed answer (None: it fails), recording what it was asked."""
    return Scripted
