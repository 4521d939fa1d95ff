"""MemoryCompressors: the three strategies of the second design document, section 7.

- A, `WindowedMemoryCompressor(max_items)`: keep the newest items only.
- B (recommended), `HybridMemoryCompressor(max_items)`: keep the newest items verbatim and fold
  the older ones into the summary with the chat model.
- C, `TaskSegmentedCompressor`: one pool per sub-task; a finished sub-task leaves only its
  summary, so the final stage reads the sub-task summaries and the current task's items.

No compressor separates a function_call from its function_call_output: cuts fall between
`item_units`, so a window may keep a few items fewer than `max_items` (or more, when the newest
tool exchange alone is larger). A call still waiting for its output holds its unit open only
until a user input abandons it (`memlab.units.abandons_pending_calls`); an unanswered call does
not keep every later item.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from memlab import ranges
from memlab.llm.base import ChatModel
from memlab.llm.prompts import check_language, render_transcript
from memlab.memory.agent import MemorySnapshot
from memlab.memory.strategies import DEFAULT_SUMMARY_COUNTER, MAX_CONVERSATION_CHARS, detect_language
from memlab.messages import Item, MessageItem, items_to_messages, system
from memlab.summary import LAYER_COMPRESSOR, write_summary
from memlab.tokens import TokenCounter, resolve_counter
from memlab.units import item_units

# `WindowedMemoryCompressor(20)` in every example of the design document.
DEFAULT_WINDOW_ITEMS = 20
# The document's sample HybridMemoryCompressor: previousSummary + "\n[压缩] 历史片段条数=" + head.size().
COUNT_SUMMARY_LINE = "[压缩] 历史片段条数={count}"
COUNT_SUMMARY = re.compile(r"\[压缩\] 历史片段条数=(\d+)")
TASK_LABEL = {"zh": "[子任务 {n}] ", "en": "[Sub-task {n}] "}
_TASK_PREFIXES = tuple(label.split("{")[0] for label in TASK_LABEL.values())
# A compressor's fallback: the document's counting line instead of the summary.
FALLBACK_COUNT = "count"


def split_window(items: Sequence[Item], max_items: int) -> tuple[list[Item], list[Item]]:
    """(dropped, kept): drop whole units from the front until at most `max_items` remain (or one unit).

    Units are `item_units`: a pending call keeps the items after it in its unit until a user input
    abandons it, so the window stays at `max_items` after a call that is never answered.
    """
    units = item_units(items)
    kept = len(items)
    drop = 0
    while kept > max_items and drop < len(units) - 1:
        kept -= len(units[drop])
        drop += 1
    dropped = [i for u in units[:drop] for i in u]
    return dropped, list(items[len(dropped) :])


def counted_summary(previous: str | None, dropped: int) -> str:
    """The document's sample summary: the previous one plus a line counting the items dropped."""
    return ((previous or "") + "\n" + COUNT_SUMMARY_LINE.format(count=dropped)).strip()


def summarized_count(summary: str | None) -> int:
    """How many items the counting summaries in `summary` stand for.

    Args:
        summary: A compressor's summary (None: none).
    """
    return sum(int(n) for n in COUNT_SUMMARY.findall(summary or ""))


def fold_summary(
    previous: str | None,
    dropped: Sequence[Item],
    llm: ChatModel | None,
    language: str = "auto",
    max_tokens: int | None = None,
    counter: str | TokenCounter = DEFAULT_SUMMARY_COUNTER,
    strategy: str = "hybrid",
) -> str:
    """A new summary covering `previous` and the `dropped` items.

    With a chat model: the context-summary prompt (keep the conversation coherent) over the
    previous summary and the dropped items, through `write_summary` (layer ``compressor``), so
    the summary must be non-empty and hold no more `counter` tokens than the previous summary and
    the dropped items together. With no model, or when the model fails or its summary is rejected
    (a FALLBACK event with action ``count`` says so): the document's counting sample,
    ``[压缩] 历史片段条数=N`` appended.

    Args:
        previous: The summary so far (None: none).
        dropped: The items the new summary must also cover.
        llm: The summarizer (None: the design document's counting line).
        language: The summary's language (auto: detected from the items).
        max_tokens: The longest summary asked for (None: the model's default).
        counter: Counts the tokens of the summary check.
        strategy: The compressor's name, for the SUMMARY event.
    """
    if llm is None:
        return counted_summary(previous, len(dropped))
    messages = items_to_messages(dropped)
    lang = (
        detect_language([previous or "", *(m.text for m in messages)])
        if language == "auto"
        else check_language(language)
    )
    folded = write_summary(
        ([system(previous)] if previous else []) + messages,
        llm=llm,
        counter=resolve_counter(counter),
        layer=LAYER_COMPRESSOR,
        strategy=strategy,
        fallback=FALLBACK_COUNT,
        language=lang,
        prefix="",
        transcript="\n".join([*_summary_lines(previous), render_transcript(messages)]),
        max_conversation_chars=MAX_CONVERSATION_CHARS,
        summary_tokens=max_tokens,
    )
    return counted_summary(previous, len(dropped)) if folded.text is None else folded.text


def _summary_lines(summary: str | None) -> list[str]:
    """The previous summary as transcript lines, verbatim (a line a model wrote as "speaker: text" stays so),
    so that re-summarizing a summary does not wrap it in another speaker each time."""
    lines = [ln.strip() for ln in (summary or "").splitlines() if ln.strip()]
    return [f"[] {ln}" if _SPEAKER_LINE.match(ln) else f"[] summary: {ln}" for ln in lines]


_SPEAKER_LINE = re.compile(r"^[^:\[\]]+: ")


@dataclass(frozen=True)
class WindowedMemoryCompressor:
    """Strategy A: keep only the newest `max_items` items; the summary is left as it is.

    Parameters: the fields of `memlab.memory.schemas.WindowedConfig`, each documented there once.
    """

    max_items: int = DEFAULT_WINDOW_ITEMS

    def __post_init__(self) -> None:  # built from Python too, where the config's schema checks no range
        from memlab.memory.schemas import WindowedConfig  # (it imports this module's defaults)

        ranges.check_values(WindowedConfig, "WindowedMemoryCompressor", max_items=self.max_items)

    def compress(self, snapshot: MemorySnapshot) -> MemorySnapshot:
        if len(snapshot.items) <= self.max_items:
            return snapshot
        _dropped, kept = split_window(snapshot.items, self.max_items)
        return MemorySnapshot.of(kept, snapshot.summary)


class SummaryFolding:
    """A compressor's summary settings, checked and resolved once, and `fold` with them (`fold_summary`).

    The base of everything here that folds dropped items into a summary (hybrid, per_task,
    tool_rounds, the sub-task pools): they take the same four settings under the same names, and a
    wrong `language` fails when the compressor is built rather than at its first summary.
    """

    def __init__(
        self,
        llm: ChatModel | None = None,
        language: str = "auto",
        max_tokens: int | None = None,
        counter: str | TokenCounter = DEFAULT_SUMMARY_COUNTER,
    ) -> None:
        self.llm = llm
        self.language = language if language == "auto" else check_language(language)
        self.max_tokens = max_tokens
        self.counter = resolve_counter(counter)

    def fold(self, previous: str | None, dropped: Sequence[Item], strategy: str) -> str:
        """`fold_summary` of `previous` and `dropped` with these settings; `strategy` names the caller in events."""
        return fold_summary(previous, dropped, self.llm, self.language, self.max_tokens, self.counter, strategy)


class HybridMemoryCompressor(SummaryFolding):
    """Strategy B (recommended): the newest `max_items` verbatim, everything older folded into the summary.

    With `llm`, the summary is written by the chat model (the document: "你可以把 head 交给模型生成更高
    质量摘要"); with no model it is the document's own sample, one ``[压缩] 历史片段条数=N`` line per
    compression, which says how much was dropped but not what.

    Parameters: the fields of `memlab.memory.schemas.HybridConfig`, each documented there once.
    """

    def __init__(
        self,
        max_items: int = DEFAULT_WINDOW_ITEMS,
        llm: ChatModel | None = None,
        language: str = "auto",
        max_tokens: int | None = None,
        counter: str | TokenCounter = DEFAULT_SUMMARY_COUNTER,
    ) -> None:
        super().__init__(llm, language, max_tokens, counter)
        self.max_items = max_items

    def compress(self, snapshot: MemorySnapshot) -> MemorySnapshot:
        if len(snapshot.items) <= self.max_items:
            return snapshot
        dropped, kept = split_window(snapshot.items, self.max_items)
        if not dropped:
            return snapshot
        summary = self.fold(snapshot.summary, dropped, "hybrid")
        return MemorySnapshot.of(kept, summary)


class TaskSegmentedCompressor(SummaryFolding):
    """Strategy C: each sub-task its own pool; finished sub-tasks survive only as their summaries.

    A sub-task starts at each message item of `boundary_role` (a new user request, by default).
    All but the newest `keep_tasks` sub-tasks are summarized one by one (each from its own items
    only, never from the others) into a numbered line of the summary, so the final stage reads
    the sub-task summaries plus the live sub-task. With no model each line is the counting sample.

    Parameters: the fields of `memlab.memory.schemas.TaskSegmentedConfig`, each documented there once.
    """

    def __init__(
        self,
        keep_tasks: int = 1,
        boundary_role: str = "user",
        llm: ChatModel | None = None,
        language: str = "auto",
        max_tokens: int | None = None,
        counter: str | TokenCounter = DEFAULT_SUMMARY_COUNTER,
    ) -> None:
        if keep_tasks < 1:
            raise ValueError(f"keep_tasks must be at least 1 (the live sub-task), not {keep_tasks}")
        super().__init__(llm, language, max_tokens, counter)
        self.keep_tasks = keep_tasks
        self.boundary_role = boundary_role

    def segments(self, items: Sequence[Item]) -> list[list[Item]]:
        """The items cut into sub-tasks, only between units."""
        tasks: list[list[Item]] = []
        for unit in item_units(items):
            head = unit[0]
            if not tasks or (isinstance(head, MessageItem) and head.role == self.boundary_role):
                tasks.append([])
            tasks[-1].extend(unit)
        return tasks

    def compress(self, snapshot: MemorySnapshot) -> MemorySnapshot:
        tasks = self.segments(snapshot.items)
        if len(tasks) <= self.keep_tasks:
            return snapshot
        done, live = tasks[: -self.keep_tasks], tasks[-self.keep_tasks :]
        lines = [snapshot.summary] if snapshot.summary else []
        number = sum(1 for line in (snapshot.summary or "").splitlines() if line.startswith(_TASK_PREFIXES))
        for task in done:
            number += 1
            text = self.fold(None, task, "per_task")
            lang = (
                detect_language(m.text for m in items_to_messages(task)) if self.language == "auto" else self.language
            )
            lines.append(TASK_LABEL[lang].format(n=number) + " ".join(text.split()))
        return MemorySnapshot.of([i for t in live for i in t], "\n".join(lines))
