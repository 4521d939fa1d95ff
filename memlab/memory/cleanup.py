"""MemoryCleanupService: applies a memory strategy to the stored history, in one transaction.

The first design document runs it "at the end of a conversation or periodically": here at each
session end (`on_session_end`) and, optionally, every `every_turns` messages or `every_seconds`
of the simulator's virtual clock. The history is read, edited and written back atomically
(`history.update`), so an exception or a crash mid-way leaves the old history whole. Each run
emits a MEMORY_CLEANUP event with the items before and after and the summary length.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from memlab.context.base import checked_output
from memlab.errors import MemlabError
from memlab.llm.prompts import MEMORY_SUMMARY_PREFIX
from memlab.memory.strategies import MemoryStrategy
from memlab.messages import Message
from memlab.runtime.agent import Component, Runtime
from memlab.trace import MEMORY_CLEANUP, emit, timed
from memlab.units import abandons_pending_calls

if TYPE_CHECKING:
    from memlab.dialogues.model import Dialogue, Session

_SUMMARY_PREFIXES = tuple(MEMORY_SUMMARY_PREFIX.values())


@dataclass(frozen=True)
class CleanupResult:
    """What one cleanup did.

    Args:
        trigger: What started the cleanup (the caller's word: "manual" by default, "session_end", ...).
        before_items: Stored messages before it.
        after_items: Stored messages after it.
        summary_length: Characters of the persistent-memory summaries it left, prefixes excluded (0: none).
    """

    trigger: str
    before_items: int
    after_items: int
    summary_length: int


def summary_length(messages: Sequence[Message]) -> int:
    """Characters of the persistent-memory summaries in `messages` (prefix excluded)."""
    total = 0
    for m in messages:
        for prefix in _SUMMARY_PREFIXES:
            if m.role == "system" and m.text.startswith(prefix):
                total += len(m.text) - len(prefix)
    return total


class MemoryCleanupService(Component):
    """A runtime component that rewrites the history with `strategy` at session ends and periodically.

    Parameters: the fields of `memlab.memory.schemas.CleanupConfig`, each documented there once.
    """

    def __init__(
        self,
        strategy: MemoryStrategy,
        on_session_end: bool = True,
        every_turns: int | None = None,
        every_seconds: float | None = None,
    ) -> None:
        if every_turns is not None and every_turns < 1:
            raise MemlabError(f"memory.every_turns must be a positive number of messages, not {every_turns}")
        if every_seconds is not None and every_seconds <= 0:
            raise MemlabError(f"memory.every_seconds must be a positive number of seconds, not {every_seconds}")
        self.strategy = strategy
        self.on_session_end_enabled = on_session_end
        self.every_turns = every_turns
        self.every_seconds = every_seconds
        self._turns = 0
        self._pending_calls: set[str] = set()
        self._last: datetime | None = None

    def clean(self, history: Any, trigger: str = "manual") -> CleanupResult:
        """Apply the strategy to `history` in one transaction and report it."""
        before: list[int] = []

        def edit(messages: list[Message]) -> list[Message]:
            before.append(len(messages))
            who = f"memory strategy {self.strategy.name!r} ({type(self.strategy).__name__})"
            return checked_output(self.strategy.apply(messages), who)

        with timed() as t:
            after = self._rewrite(history, edit)
        result = CleanupResult(trigger, before[-1], len(after), summary_length(after))
        emit(
            MEMORY_CLEANUP,
            strategy=self.strategy.name,
            trigger=trigger,
            before_items=result.before_items,
            after_items=result.after_items,
            summary_length=result.summary_length,
            latency_us=t["us"],
        )
        return result

    @staticmethod
    def _rewrite(history: Any, edit: Callable[[list[Message]], list[Message]]) -> list[Message]:
        if hasattr(history, "update"):
            return list(history.update(edit))
        if hasattr(history, "replace"):  # a plain ChatMemory: read, edit, swap
            new: Iterable[Message] = edit(history.messages())
            history.replace(new)
            return list(history.messages())
        raise MemlabError(
            f"memory: the history ({type(history).__name__}) cannot be rewritten; the agent_memory entry must give a "
            "history with update() or replace() (e.g. agent_memory=chat)"
        )

    def on_dialogue_start(self, runtime: Runtime, dialogue: Dialogue) -> None:
        self._turns = 0
        self._last = runtime.now
        self._pending_calls = set()

    def checkpoint(self) -> dict[str, Any]:
        return {"turns": self._turns, "last": self._last, "pending_calls": sorted(self._pending_calls)}

    def restore(self, state: dict[str, Any]) -> None:
        self._turns, self._last, self._pending_calls = state["turns"], state["last"], set(state["pending_calls"])

    def on_message(self, runtime: Runtime, message: Message) -> None:
        self._turns += 1
        if self._last is None:
            self._last = runtime.now
        # A periodic cleanup waits until every tool call is answered: run between a call and its
        # result, any strategy would see (and drop) half a unit, and the result would arrive orphaned.
        # As in `item_units`, a message's calls add to those still pending (parallel calls may come in two
        # assistant messages before their results), and a user message abandons them, so a call never
        # answered does not stop periodic cleanup for the rest of the dialogue.
        if message.role == "assistant" and message.tool_calls:
            self._pending_calls |= {c.id for c in message.tool_calls}
        elif message.role == "tool":
            self._pending_calls.discard(message.tool_call_id or "")
        elif abandons_pending_calls(message.role):
            self._pending_calls = set()
        if self._pending_calls:
            return
        if self.every_turns is not None and self._turns >= self.every_turns:
            self._periodic(runtime, "turns")
        elif self._seconds_due(runtime.now):
            self._periodic(runtime, "seconds")

    def _seconds_due(self, now: datetime | None) -> bool:
        if self.every_seconds is None or now is None or self._last is None:
            return False
        return (now - self._last).total_seconds() >= self.every_seconds

    def _periodic(self, runtime: Runtime, trigger: str) -> None:
        self.clean(runtime.history, trigger)
        self._turns = 0
        self._last = runtime.now

    def on_session_end(self, runtime: Runtime, session: Session) -> None:
        if self.on_session_end_enabled:
            self.clean(runtime.history, "session_end")
