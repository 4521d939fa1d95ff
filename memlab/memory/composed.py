"""Compressors for the second design document's configuration matrix (section 11) that the three strategies lack.

- `ChainCompressor(stages)`: several compressors one after the other on each write, so that
  "window + summary + sub-tasks" (research tasks: "更大窗口 + 摘要 + 子任务拆分") is one memory:
  e.g. `TaskSegmentedCompressor` (finished sub-tasks leave a summary line each), then
  `HybridMemoryCompressor` (the live part beyond its window is folded into the summary).
- `ToolRoundsCompressor(keep_rounds)`: CodeAct ("建议保留最近几轮 code/result，避免修复上下文丢失"):
  every message item stays, but only the newest `keep_rounds` tool exchanges (function_call plus
  function_call_output units, whole) are kept; older ones are folded into the summary.

>>> from memlab.messages import FunctionCall, FunctionCallOutput, MessageItem
>>> items = []
>>> for n in range(4):
...     items += [MessageItem("user", f"step {n}"), FunctionCall(f"c{n}", "run"), FunctionCallOutput(f"c{n}", "ok")]
>>> out = ToolRoundsCompressor(keep_rounds=2).compress(MemorySnapshot.of(items))
>>> [getattr(i, "call_id", i.type) for i in out.items], out.summary
(['message', 'message', 'message', 'c2', 'c2', 'message', 'c3', 'c3'], '[压缩] 历史片段条数=4')
"""

from __future__ import annotations

from collections.abc import Sequence

from memlab.llm.base import ChatModel
from memlab.memory.agent import MemoryCompressor, MemorySnapshot
from memlab.memory.compressors import SummaryFolding
from memlab.memory.strategies import DEFAULT_SUMMARY_COUNTER
from memlab.messages import FunctionCall, Item
from memlab.tokens import TokenCounter
from memlab.units import item_units

# CodeAct: "the last few rounds" of code and result.
DEFAULT_KEEP_ROUNDS = 3


class ChainCompressor:
    """Each stage compresses what the previous one returned (an empty chain changes nothing).

    Parameters: the fields of `memlab.memory.schemas.ChainConfig`, each documented there once.
    """

    def __init__(self, stages: Sequence[MemoryCompressor]) -> None:
        self.stages = list(stages)

    def compress(self, snapshot: MemorySnapshot) -> MemorySnapshot:
        for stage in self.stages:
            snapshot = stage.compress(snapshot)
        return snapshot

    def __repr__(self) -> str:
        return f"ChainCompressor({[type(s).__name__ for s in self.stages]})"


class ToolRoundsCompressor(SummaryFolding):
    """CodeAct's memory: the newest `keep_rounds` tool exchanges whole, every message item, older rounds summarized.

    Parameters: the fields of `memlab.memory.schemas.ToolRoundsConfig`, each documented there once.
    """

    def __init__(
        self,
        keep_rounds: int = DEFAULT_KEEP_ROUNDS,
        llm: ChatModel | None = None,
        language: str = "auto",
        max_tokens: int | None = None,
        counter: str | TokenCounter = DEFAULT_SUMMARY_COUNTER,
    ) -> None:
        if keep_rounds < 0:
            raise ValueError(f"keep_rounds must be 0 or more, not {keep_rounds}")
        super().__init__(llm, language, max_tokens, counter)
        self.keep_rounds = keep_rounds

    def settled_after(self, items: Sequence[Item]) -> bool:
        """Items with no function call start no tool round: what `compress` returned it returns unchanged with them."""
        return not any(isinstance(i, FunctionCall) for i in items)

    def compress(self, snapshot: MemorySnapshot) -> MemorySnapshot:
        units = item_units(snapshot.items)
        rounds = [i for i, u in enumerate(units) if isinstance(u[0], FunctionCall)]
        old = set(rounds[: max(len(rounds) - self.keep_rounds, 0)])
        if not old:
            return snapshot
        dropped: list[Item] = [i for n in sorted(old) for i in units[n]]
        kept = [i for n, u in enumerate(units) if n not in old for i in u]
        summary = self.fold(snapshot.summary, dropped, "tool_rounds")
        return MemorySnapshot.of(kept, summary)
