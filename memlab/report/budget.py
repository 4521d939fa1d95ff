"""The context budget a run was configured with, beside the prompt tokens it measured.

A budget (`context.max_tokens`) is counted by the context's counter (`context.counter`): the design
document's estimate, ``chars / 2.5 + 4`` per message, or the run's tokenizer (exact). Every report
counts with the run's tokenizer, and the estimate over-counts English chat, so an estimated budget
of 2,000 sends about 1,200 measured tokens on LoCoMo; these lines say so where the numbers are shown.

>>> budget = Budget(2000, "estimate")
>>> str(budget), used_line(1198.3, 2000)
('2,000 estimate', 'uses 60% of the 2,000-token budget')
>>> unused_hint(budget, 2000).split(": ")[-1]
'context.counter=exact spends the budget in the tokens measured here'
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from memlab.context.interceptor import configured_budget

# A run (or a recommendation) that sends less than this share of its budget leaves budget unused.
UNUSED_BELOW = 0.9
MAX_TOKENS, COUNTER = "budget.max_tokens", "budget.counter"  # the comparison table's columns


@dataclass(frozen=True)
class Budget:
    """A context strategy's token budget and how it counts: exact (the run's tokenizer), estimate, or a counter spec."""

    max_tokens: int
    counter: str

    def __str__(self) -> str:
        return f"{self.max_tokens:,} {self.counter}"


def run_budget(config: Mapping[str, Any]) -> Budget | None:
    """The budget of a run's context strategy, from its resolved config (None: the strategy has none)."""
    found = configured_budget(config.get("context"))
    if found is None:
        return None
    max_tokens, spec = found
    return Budget(max_tokens, "exact" if spec == str(config.get("tokenizer")) else spec)


def used_line(tokens: float, budget: float) -> str:
    """How much of `budget` a mean of `tokens` per call uses."""
    return f"uses {tokens / budget:.0%} of the {budget:,.0f}-token budget"


def unused_hint(configured: Budget | None, budget: float) -> str:
    """Why a configuration leaves part of `budget` unused, and the setting that would spend it."""
    if configured is None:
        return "it has no token budget (its cut counts messages or summarizes)"
    if configured.max_tokens < budget:  # first: no counter spends a budget the strategy was not given
        return f"its context.max_tokens={configured.max_tokens} is below the budget"
    if configured.counter == "estimate":
        return (
            f"its context.max_tokens={configured.max_tokens} counts the estimate (chars / 2.5 + 4), which "
            "over-counts: context.counter=exact spends the budget in the tokens measured here"
        )
    return f"its context.max_tokens={configured.max_tokens} is not filled: many requests are shorter"


def budget_columns(config: Mapping[str, Any]) -> dict[str, Any]:
    """The comparison table's budget columns of a run: max_tokens and counter (None and "" without a budget)."""
    configured = run_budget(config)
    if configured is None:
        return {MAX_TOKENS: None, COUNTER: ""}
    return {MAX_TOKENS: configured.max_tokens, COUNTER: configured.counter}


def budget_from_row(row: Mapping[Any, Any]) -> Budget | None:
    """The `Budget` of a comparison table row (`budget_columns`)."""
    max_tokens = row.get(MAX_TOKENS)
    if max_tokens is None or max_tokens != max_tokens:  # None, or NaN read back from a CSV
        return None
    return Budget(int(max_tokens), str(row.get(COUNTER) or "estimate"))
