"""One name per knob: `context.max_tokens`, `keep_first`, `keep_last`, `threshold` reach every entry's strategy."""

from __future__ import annotations

import sys

import pytest

from memlab.context import Composite, SlidingWindow, Summarize, Trim
from memlab.context.interceptor import ignored_knobs
from memlab.experiment import instantiate


def _steps(strategy: object) -> list[object]:
    return list(strategy.strategies) if isinstance(strategy, Composite) else [strategy]


@pytest.mark.parametrize(
    ("entry", "used", "ignored"),
    [
        ("trim", {Trim: ("keep_first", "keep_last")}, ("max_tokens", "threshold")),
        ("summarize", {Summarize: ("threshold", "keep_last")}, ("max_tokens", "keep_first")),
        ("sliding_window", {SlidingWindow: ("max_tokens",)}, ("keep_first", "keep_last", "threshold")),
        ("composite", {Summarize: ("threshold", "keep_last"), SlidingWindow: ("max_tokens",)}, ("keep_first",)),
    ],
)
def test_each_knob_reaches_the_strategy_or_is_reported_ignored(make_config, entry, used, ignored) -> None:
    values = {"max_tokens": 1234, "keep_first": 3, "keep_last": 7, "threshold": 30}
    cfg = make_config(f"context={entry}", *(f"context.{k}={v}" for k, v in values.items()))
    interceptor = instantiate(cfg.context)
    steps = _steps(interceptor.strategy)
    assert {type(s) for s in steps} == set(used)
    for step in steps:
        for knob in used[type(step)]:
            assert getattr(step, knob) == values[knob], (entry, knob)
    assert ignored_knobs(cfg.context) == {f"context.{k}": values[k] for k in ignored}


@pytest.mark.parametrize("entry", ["trim", "summarize", "sliding_window", "composite"])
def test_defaults_are_the_strategies_own(make_config, entry) -> None:
    """Without overrides each strategy runs with its documented defaults and nothing is ignored."""
    cfg = make_config(f"context={entry}")
    interceptor = instantiate(cfg.context)
    assert ignored_knobs(cfg.context) == {}
    defaults = {Trim: Trim(), SlidingWindow: SlidingWindow(), Summarize: Summarize(llm=None)}
    for step in _steps(interceptor.strategy):
        expected = defaults[type(step)]
        for knob in ("max_tokens", "keep_first", "keep_last", "threshold"):
            assert getattr(step, knob, None) == getattr(expected, knob, None), (entry, knob)


def test_no_context_ignores_every_knob_set(make_config) -> None:
    cfg = make_config("context=none", "context.max_tokens=500", "context.keep_last=4")
    assert ignored_knobs(cfg.context) == {"context.max_tokens": 500, "context.keep_last": 4}


def test_a_peer_entry_reports_nothing_ignored_without_importing_its_library(make_config) -> None:
    """Reading a peer entry's knobs builds nothing, so a missing optional library cannot break the manifest."""
    cfg = make_config("context=langchain_trim")
    before = set(sys.modules)
    assert ignored_knobs(cfg.context) == {}
    assert not {m for m in set(sys.modules) - before if m.startswith("langchain")}
