"""No strategy ever sends an orphaned tool message, on any tau-bench trajectory, at any budget from 200 to 8,000."""

from __future__ import annotations

import pytest

from memlab.context import Composite, SlidingWindow, SummarizationHook, Summarize, Trim
from memlab.llm import ExtractiveChatModel
from memlab.messages import Message
from memlab.runtime import CallContext, SecurityContext
from memlab.tokens import get_counter
from memlab.units import orphans, unit_spans

BUDGETS = range(200, 8_001, 200)
CTX = CallContext("d", "s", 0, None, SecurityContext("u"), counter=get_counter("estimate"))


def requests(trajectory: list[Message]) -> list[list[Message]]:
    """What a replay sends: every prefix that ends where an assistant turn starts."""
    return [trajectory[:i] for i, m in enumerate(trajectory) if m.role == "assistant" and i > 0]


def test_the_trajectories_are_clean_and_use_tools(tau_bench: list[list[Message]]) -> None:
    assert len(tau_bench) == 150
    assert all(orphans(t) == [] for t in tau_bench)
    assert sum(1 for t in tau_bench for s, e in unit_spans(t) if e - s > 1) > 500  # many call-and-result units


@pytest.mark.parametrize("counter", ["estimate", "cl100k_base"])
@pytest.mark.parametrize("keep_system", [True, False])
def test_sliding_window(tau_bench: list[list[Message]], counter: str, keep_system: bool) -> None:
    for trajectory in tau_bench:
        for budget in BUDGETS:
            assert orphans(SlidingWindow(budget, counter, keep_system).apply(trajectory)) == []
        for request in requests(trajectory)[::3]:
            for budget in (200, 1_000, 3_000, 8_000):
                assert orphans(SlidingWindow(budget, counter, keep_system).apply(request)) == []


@pytest.mark.parametrize(
    "options",
    [{"start_on": "user"}, {"end_on": "user"}, {"start_on": "assistant", "end_on": "tool"}, {"allow_partial": True}],
)
def test_sliding_window_with_peer_options(tau_bench: list[list[Message]], options: dict) -> None:
    for trajectory in tau_bench:
        for request in [trajectory, *requests(trajectory)[::3]]:
            for budget in (200, 1_000, 3_000, 8_000):
                assert orphans(SlidingWindow(budget, **options).apply(request)) == []


def test_trim(tau_bench: list[list[Message]]) -> None:
    for trajectory in tau_bench:
        for request in [trajectory, *requests(trajectory)[::4]]:
            for keep_first in range(5):
                for keep_last in range(8):
                    assert orphans(Trim(keep_first, keep_last).apply(request)) == []
                    placeheld = Trim(keep_first, keep_last, placeholder="Skipped {n} messages.").apply(request)
                    assert orphans(placeheld) == []


def test_summarize_and_its_fallback(tau_bench: list[list[Message]], failing_model) -> None:  # type: ignore[no-untyped-def]
    model = ExtractiveChatModel()
    for trajectory in tau_bench:
        for keep_last in (1, 3):
            assert orphans(Summarize(model, threshold=8, keep_last=keep_last).apply(trajectory)) == []
        assert orphans(Summarize(failing_model, threshold=8).apply(trajectory)) == []


def test_composite_at_every_budget(tau_bench: list[list[Message]]) -> None:
    model = ExtractiveChatModel()
    for trajectory in tau_bench:
        folded = Summarize(model, threshold=8).apply(trajectory)
        for budget in (BUDGETS[0], BUDGETS[-1]):  # the pipeline is the window over the summary
            pipeline = Composite([Summarize(model, threshold=8), SlidingWindow(budget)])
            assert pipeline.apply(trajectory) == SlidingWindow(budget).apply(folded)
        for budget in BUDGETS:
            assert orphans(SlidingWindow(budget).apply(folded)) == []
        assert orphans(Composite().apply(trajectory)) == []


@pytest.mark.parametrize("model", [None, "extractive", "failing"])
def test_summarization_hook(tau_bench: list[list[Message]], model: str | None, failing_model) -> None:  # type: ignore[no-untyped-def]
    llm = {"extractive": ExtractiveChatModel(), "failing": failing_model, None: None}[model]
    for trajectory in tau_bench:
        for trigger in (200, 1_000, 4_000, 8_000):
            assert orphans(SummarizationHook(llm, trigger_tokens=trigger).process(trajectory, CTX)) == []
