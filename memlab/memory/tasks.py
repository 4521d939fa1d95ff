"""Per-task memory pools (second design document, strategy C: "每个子任务独立记忆池，汇总阶段只读子任务摘要").

An orchestrator gives each sub-task its own AgentMemory; when a sub-task finishes, its pool is
summarized on its own and released, and the final stage is built from those summaries only.
`TaskSegmentedCompressor` does the same inside one memory, for replays.

>>> tasks = TaskMemory()
>>> tasks.pool("search").add_user_input("find flights to Oslo")
>>> tasks.finish("search")
'[压缩] 历史片段条数=1'
>>> tasks.final_snapshot().summary
'[Sub-task 1: search] [压缩] 历史片段条数=1'
"""

from __future__ import annotations

from collections.abc import Callable

from memlab.llm.base import ChatModel
from memlab.memory.agent import AgentMemory, InMemoryAgentMemory, MemorySnapshot
from memlab.memory.compressors import SummaryFolding


class TaskMemory(SummaryFolding):
    """Named sub-task pools from `supplier`, and the summaries of the finished ones (in finishing order)."""

    def __init__(
        self,
        supplier: Callable[[str], AgentMemory] | None = None,
        llm: ChatModel | None = None,
        language: str = "auto",
        max_tokens: int | None = None,
    ) -> None:
        super().__init__(llm, language, max_tokens)
        self.supplier = supplier or (lambda _task: InMemoryAgentMemory())
        self._pools: dict[str, AgentMemory] = {}
        self._summaries: dict[str, str] = {}

    def pool(self, task: str) -> AgentMemory:
        """The memory of sub-task `task` (created on first use)."""
        if task in self._summaries:
            raise ValueError(f"sub-task {task!r} is finished; its pool was summarized and released")
        if task not in self._pools:
            self._pools[task] = self.supplier(task)
        return self._pools[task]

    def finish(self, task: str) -> str:
        """Summarize the sub-task from its own pool only, release the pool, and return the summary."""
        memory = self._pools.pop(task)
        snap = memory.snapshot()
        self._summaries[task] = self.fold(snap.summary, snap.items, "task_memory")
        memory.clear()
        return self._summaries[task]

    def summaries(self) -> dict[str, str]:
        return dict(self._summaries)

    def final_snapshot(self) -> MemorySnapshot:
        """What the final stage reads: no items, one labelled line per finished sub-task."""
        lines = [
            f"[Sub-task {n}: {task}] {' '.join(text.split())}"
            for n, (task, text) in enumerate(self._summaries.items(), 1)
        ]
        return MemorySnapshot.of((), "\n".join(lines) or None)
