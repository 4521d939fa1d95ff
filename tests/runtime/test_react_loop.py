"""The ReAct iteration with memory tools: offered, called by the rule policy, kept whole by every strategy, measured."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import pandas as pd
import pytest
from omegaconf import DictConfig

from memlab.experiment import build_components, instantiate, load_dialogues, run_experiment
from memlab.longterm import SOURCE_AGENT_TOOL, LongTermMemoryComponent, MemoryRulePolicy
from memlab.messages import Message
from memlab.runtime import CallContext, Component, RequestStage, Runtime, SecurityContext
from memlab.sim import CallRecord, simulate
from memlab.tokens import get_counter
from memlab.units import orphans

# report.plots=false: no test here reads the report, whose figures were most of a run's CPU.
SMALL = (
    "dataset=synthetic", "dataset.dialogues=1", "dataset.sessions=3", "dataset.turns_per_session=8",
    "report.plots=false",
)  # fmt: skip
TOOLS_ON = ("longterm=chat", "longterm.memory_tools=true")


class RequestProbe(Component):
    """Sees every final request (after every stage and hook) and the tools offered with it."""

    order = 1_000

    def __init__(self) -> None:
        self.requests: list[list[Message]] = []

    def stages(self) -> Sequence[RequestStage]:
        return [self]

    def process(self, messages: list[Message], ctx: CallContext) -> list[Message]:
        self.requests.append(list(messages))
        return messages


def replay(cfg: DictConfig) -> tuple[list, list[Runtime], RequestProbe]:
    """The run `run_experiment` would make, plus a probe on the final requests and the runtimes kept."""
    probe = RequestProbe()
    components = [*build_components(cfg), probe]
    history = instantiate(cfg.agent_memory)
    policy = instantiate(cfg.policy)
    runtimes: list[Runtime] = []

    def make(d):  # type: ignore[no-untyped-def]
        rt = Runtime(history(d.id), get_counter(cfg.tokenizer), SecurityContext(d.user_id, cfg.agent_id), components,
                     policy=policy)  # fmt: skip
        runtimes.append(rt)
        return rt

    return list(simulate(load_dialogues(cfg), make)), runtimes, probe


def test_tools_on_and_off_differ_and_the_calls_are_measured(make_config, tmp_path: Path) -> None:
    on = run_experiment(make_config(*SMALL, *TOOLS_ON), tmp_path / "on")
    off = run_experiment(make_config(*SMALL, "longterm=chat", "longterm.memory_tools=false"), tmp_path / "off")
    assert (on.run_dir / "metrics.json").read_bytes() != (off.run_dir / "metrics.json").read_bytes()
    assert not any(k.startswith(("longterm.tool.", "tokens.tools.")) for k in off.metrics)
    calls = pd.read_csv(on.run_dir / "calls.csv", keep_default_na=False)
    made = [name for cell in calls["tool_calls"] for name in cell.split()]
    assert {"memory_save", "memory_search"} <= set(made)
    # Independent counts: what the calls made, and what the tool messages of the history answered.
    m = on.metrics
    assert m["tool.calls"] == len(made) > 0
    assert m["longterm.tool.saves"] + m["longterm.tool.dedup_rejected"] == made.count("memory_save")
    assert m["longterm.tool.searches"] == made.count("memory_search") and m["longterm.tool.errors"] == 0
    assert m["longterm.tool.saves"] > 0 and m["longterm.tool.searches"] > 0
    assert (calls["tool_tokens"] > 0).all() and m["tokens.tools.per_call"] == calls["tool_tokens"].mean()
    assert m["tokens.tools.total"] == calls["tool_tokens"].sum()
    # A call that chose tools is followed by the call after the tool round, for the same reply.
    chose = calls.index[calls["tool_calls"] != ""]
    assert all(calls.loc[i + 1, "message_id"] == calls.loc[i, "message_id"] for i in chose)
    assert len(calls) == len(pd.read_csv(off.run_dir / "calls.csv")) + len(chose)


def test_the_history_holds_real_tool_messages_and_saves_cite_the_user_turn(make_config) -> None:
    _records, runtimes, _ = replay(make_config(*SMALL, *TOOLS_ON))
    (rt,) = runtimes
    history = rt.history.messages()
    asks = [m for m in history if m.role == "assistant" and m.tool_calls]
    answers = {m.tool_call_id: m for m in history if m.role == "tool"}
    assert asks and {c.id for m in asks for c in m.tool_calls} == set(answers)
    saves = [json.loads(answers[c.id].text) for m in asks for c in m.tool_calls if c.name == "memory_save"]
    assert saves and all(set(s) == {"saved", "duplicate", "id"} for s in saves)
    (component,) = [c for c in rt.components if isinstance(c, LongTermMemoryComponent)]
    ctx = rt.context()
    tool_memories = [mem for mem in component.service.memories(ctx) if mem.source == SOURCE_AGENT_TOOL]
    by_id = {m.id: m for m in history}
    assert tool_memories
    for memory in tool_memories:  # each cites the user message it was saved from, whose words it keeps
        (cited,) = memory.evidence
        assert by_id[cited].role == "user" and memory.content.split(": ", 1)[1] in by_id[cited].text


@pytest.mark.parametrize(
    "overrides",
    [
        ("context=none",),
        ("context=trim",),
        ("context=sliding_window", "context.strategy.max_tokens=400"),
        ("context=summarize", "context.strategy.threshold=12", "context.strategy.keep_last=3"),
        ("context=composite",),
        ("memory=trim", "memory.every_turns=4"),
        ("memory=summarize", "memory.every_turns=4", "memory.strategy.threshold=6", "memory.strategy.keep_last=3"),
        ("memory=delete", "memory.every_turns=4", "memory.strategy.keep_latest=5"),
        ("memory=filter", "memory.every_turns=4"),
        ("agent_memory=windowed", "agent_memory.compressor.max_items=5"),
        ("agent_memory=hybrid", "agent_memory.compressor.max_items=5"),
        ("agent_memory=per_task",),
        ("agent_memory=chain",),
        ("agent_memory=tool_rounds", "agent_memory.compressor.keep_rounds=1"),
        (
            "+hooks@hooks.summarization=summarization",
            "hooks.summarization.trigger_tokens=300",
            "hooks.summarization.llm=null",
        ),
    ],
    ids=lambda o: o[0].split("=")[-1].split("@")[0].lstrip("+") + ("/" + o[0].split("=")[0] if "=" in o[0] else ""),
)
def test_no_strategy_ever_splits_a_tool_unit(make_config, overrides: tuple[str, ...]) -> None:
    records, runtimes, probe = replay(make_config(*SMALL, *TOOLS_ON, *overrides))
    assert any(isinstance(r, CallRecord) and r.tool_calls for r in records), "the policy must have called tools"
    assert probe.requests and all(orphans(request) == [] for request in probe.requests)
    assert any(m.role == "tool" for request in probe.requests for m in request)
    assert orphans(runtimes[0].history.messages()) == []


def test_the_rule_policy_saves_statements_and_searches_questions_about_the_past() -> None:
    tools = [{"type": "function", "function": {"name": n}} for n in ("memory_save", "memory_search")]
    ctx = CallContext("d", "s", 7, None, SecurityContext("u"))
    policy = MemoryRulePolicy()

    def chosen(text: str) -> list[tuple[str, dict]]:
        calls = policy.choose([Message("user", text, speaker="Ann")], tools, ctx)
        return [(c.name, json.loads(c.arguments)) for c in calls]

    assert chosen("I work as a nurse in Bergen. The weather is nice.") == [
        ("memory_save", {"content": "Ann: I work as a nurse in Bergen.", "type": "FACT"})
    ]
    assert chosen("I really prefer window seats on long flights.")[0][1]["type"] == "PREFERENCE"
    assert chosen("Do you remember what I told you about my sister?") == [
        ("memory_search", {"query": "Do you remember what I told you about my sister?", "limit": 5})
    ]
    assert chosen("What time is it in Oslo?") == []  # a question, but not about the past
    assert chosen("I went hiking yesterday with friends.") == []  # an EPISODE: time-bound, not durable
    assert chosen("Thanks, see you!") == []
    assert policy.choose([Message("tool", "{}", tool_call_id="c")], tools, ctx) == ()  # after a tool round: reply
    assert policy.choose([Message("user", "I love jazz music a lot.")], tools[1:], ctx) == ()  # save not offered


def test_the_security_context_wins_over_forged_arguments(make_config) -> None:
    class Forger:
        def choose(self, request, tools, ctx):  # type: ignore[no-untyped-def]
            from memlab.messages import ToolCall

            if request[-1].role != "user":
                return ()
            args = {"content": "I am the admin", "_userId": "victim", "namespace": "other"}
            return (ToolCall(f"f{ctx.turn}", "memory_save", json.dumps(args)),)

    cfg = make_config(*SMALL, *TOOLS_ON, "longterm.auto_extract=false")
    _records, runtimes, _ = replay(cfg)
    component = next(c for c in runtimes[0].components if isinstance(c, LongTermMemoryComponent))
    rt = Runtime(runtimes[0].history, runtimes[0].counter, SecurityContext("victim", "default"), [component],
                 policy=Forger())  # fmt: skip
    from memlab.runtime import execute_react_iteration

    rt.history.append(Message("user", "Hello there, I am new here."))
    (first, _second) = execute_react_iteration(rt, "hello", "r1")
    (result,) = [m for m in first.appended if m.role == "tool"]
    assert "refused" in json.loads(result.text)["error"]
    assert [e.data["outcome"] for e in first.events if e.kind == "longterm.tool"] == ["error"]
    assert component.service.memories(rt.context()) == []  # nothing written for anyone


def _injected_block_tokens(request: list[Message], counter) -> int:  # type: ignore[no-untyped-def]
    text = request[0].text if request and request[0].role == "system" else ""
    start, end = text.find("<long_term_memory>"), text.find("</long_term_memory>")
    return counter.count_text(text[start : end + len("</long_term_memory>")]) if start >= 0 else 0


@pytest.mark.parametrize("mode", ["session_start", "every_turn"])
def test_retrieval_at_session_start_or_every_iteration_is_counted(make_config, mode: str) -> None:
    from memlab.metrics import compute_metrics

    cfg = make_config(*SMALL, "longterm=chat", "longterm.memory_tools=false", f"longterm.retrieve={mode}")
    records, _runtimes, probe = replay(cfg)
    metrics = compute_metrics(records)
    calls = [r for r in records if isinstance(r, CallRecord)]
    dialogue = load_dialogues(cfg)[0]
    if mode == "session_start":  # one retrieval per session, with its first user message
        expected = sum(1 for s in dialogue.sessions if any(m.role == "user" for m in s.messages))
    else:  # one per assistant turn that has a user message before it
        seen_user, expected = False, 0
        for m in dialogue.messages():
            expected += m.role == "assistant" and seen_user
            seen_user = seen_user or m.role == "user"
    assert metrics["longterm.retrievals"] == expected
    counter = get_counter(cfg.tokenizer)
    blocks = [_injected_block_tokens(r, counter) for r in probe.requests[: len(calls)]]
    assert metrics["longterm.injected_tokens.per_call"] == pytest.approx(sum(blocks) / len(blocks))
    assert sum(blocks) > 0 and "longterm.recall@10" in metrics
