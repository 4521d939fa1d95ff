"""Peer strategies on the real corpora: ids come back, budgets hold, each matches its library's documented rule.

Every peer wraps the real library (extra memlab[peers]); these tests check the conversion (the
messages that come back are the very messages given, ids and all), that budgets are counted
with memlab's counter, where each peer leaves tool-call orphans on tau-bench, the error without
the extra, and the LlamaIndex summary buffer through memlab's models (extractive, and litellm
over HTTP to the local OpenAI-compatible server).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from peer_libraries import (
    AutogenBuffered,
    AutogenHeadTail,
    AutogenTokenLimited,
    LangchainTrim,
    LlamaIndexBuffer,
    LlamaIndexSummary,
)

from memlab.context import SlidingWindow
from memlab.errors import MemlabError
from memlab.experiment import run_experiment
from memlab.llm import ExtractiveChatModel, LitellmChatModel
from memlab.messages import Message
from memlab.tokens import get_counter
from memlab.trace import SUMMARY, recording
from memlab.units import orphans

BUDGETS = [200, 1_000, 4_000]


def peers(budget: int) -> list:
    return [
        LangchainTrim(max_tokens=budget),
        LangchainTrim(max_tokens=budget, token_counter="approximate"),
        LlamaIndexBuffer(max_tokens=budget),
        LlamaIndexSummary(llm=ExtractiveChatModel(), max_tokens=budget),
        AutogenHeadTail(head_size=2, tail_size=3),
        AutogenBuffered(buffer_size=20),
        AutogenTokenLimited(max_tokens=budget),
    ]


def prefixes(conversation: list[Message], n: int = 3) -> list[list[Message]]:
    """A few of a replay's requests: the history before an assistant turn, spread over the conversation."""
    turns = [i for i, m in enumerate(conversation) if m.role == "assistant" and i > 0]
    return [conversation[: turns[len(turns) * (k + 1) // n - 1]] for k in range(n)]


def test_peers_return_the_messages_they_were_given(locomo: list[list[Message]]) -> None:
    for budget in BUDGETS:
        for peer in peers(budget):
            for request in prefixes(locomo[0]):
                out = peer.apply(request)
                given = {id(m) for m in request}
                made = [m for m in out if id(m) not in given]
                assert all(m.id is None for m in made), peer  # only messages a peer makes have no id
                kept = [m.id for m in out if id(m) in given]
                assert kept == [m.id for m in request if m.id in set(kept)], peer  # in order, no repeats


def test_langchain_trim_equals_sliding_window_on_locomo(locomo: list[list[Message]]) -> None:
    """Same rule (newest messages within max_tokens, system first), same counter: the same result."""
    history = [Message("system", "You remember what the user said."), *locomo[1]]
    for spec in ("estimate", "cl100k_base"):
        for budget in [0, 50, *BUDGETS, 10**6]:
            for request in prefixes(history):
                ours = SlidingWindow(max_tokens=budget, counter=spec).apply(request)
                theirs = LangchainTrim(max_tokens=budget, counter=spec).apply(request)
                assert theirs == ours, (spec, budget, len(request))


def test_llamaindex_buffer_keeps_the_newest_messages_whose_joined_text_fits(locomo: list[list[Message]]) -> None:
    """ChatMemoryBuffer's documented rule, computed here: the longest tail whose space-joined text fits,
    not starting on an assistant or tool message (the one-message tail and the whole history excepted)."""
    counter = get_counter("estimate")
    for budget in BUDGETS:
        for request in prefixes(locomo[2]):
            expected = request[-1:]
            for k in range(len(request), 0, -1):
                tail = request[-k:]
                if 1 < k < len(request) and tail[0].role in ("assistant", "tool"):
                    continue
                if counter.count_text(" ".join(m.text for m in tail)) <= budget:
                    expected = tail
                    break
            assert LlamaIndexBuffer(max_tokens=budget).apply(request) == expected


def test_autogen_token_limited_fits_its_budget_in_memlabs_counts(locomo: list[list[Message]]) -> None:
    counter = get_counter("estimate")
    for budget in BUDGETS:
        for request in prefixes(locomo[3]):
            out = AutogenTokenLimited(max_tokens=budget).apply(request)
            assert counter.count_request(out) - counter.priming <= budget
            dropped = len(request) - len(out)
            assert out[: len(out) // 2] == request[: len(out) // 2] or dropped == 0  # it pops from the middle


def test_llamaindex_summary_reports_what_it_folded(locomo: list[list[Message]]) -> None:
    peer = LlamaIndexSummary(llm=ExtractiveChatModel(), max_tokens=300)
    history = locomo[0][:120]
    folded: set[str] = set()
    for end in range(20, len(history) + 1, 20):
        with recording() as events:
            out = peer.apply(history[:end])
        summaries = [e for e in events if e.kind == SUMMARY]
        for e in summaries:
            folded = set(e.data["source_ids"])
            assert e.data["summary_tokens"] > 0 and e.data["accepted"]
        kept = {m.id for m in out if m.id is not None}
        assert out[0].role == "system" and out[0].id is None  # the summary, first
        assert folded | kept == {m.id for m in history[:end]}  # every message is kept or in the summary
        assert not folded & kept


def test_tool_orphans_on_tau_bench_appear_only_for_peers_that_cut_inside_units(tau_bench: list[list[Message]]) -> None:
    found: dict[str, int] = {}
    for trajectory in tau_bench[:40]:
        for request in prefixes(trajectory, 6):
            for peer in [*peers(4_000), SlidingWindow(max_tokens=4_000)]:
                label = repr(peer)
                found[label] = found.get(label, 0) + bool(orphans(peer.apply(request)))
    assert found[repr(SlidingWindow(max_tokens=4_000))] == 0
    assert found[repr(AutogenTokenLimited(max_tokens=4_000))] > 0  # it pops single messages from the middle
    assert found[repr(AutogenHeadTail(head_size=2, tail_size=3))] == 0  # it drops split units at its two cuts


def test_without_the_extra_the_error_names_it(monkeypatch: pytest.MonkeyPatch) -> None:
    for module, build in [
        ("langchain_core.messages.utils", lambda: LangchainTrim()),
        ("llama_index.core.memory", lambda: LlamaIndexBuffer()),
        ("autogen_core.models", lambda: AutogenBuffered()),
    ]:
        monkeypatch.setitem(sys.modules, module, None)  # what a missing package looks like to import
        with pytest.raises(MemlabError, match=r"pip install 'memlab\[peers\]'"):
            build()
        monkeypatch.delitem(sys.modules, module)


def test_bad_options_fail_at_build_naming_the_key() -> None:
    with pytest.raises(MemlabError, match="strategy='middle'"):
        LangchainTrim(strategy="middle")
    with pytest.raises(MemlabError, match="start_on"):
        LangchainTrim(start_on="human")  # memlab's role names: user, assistant, system, tool
    with pytest.raises(MemlabError, match="head_size"):
        AutogenHeadTail(head_size=0)
    with pytest.raises(MemlabError, match="max_tokens"):
        LlamaIndexBuffer(max_tokens=0)


def test_a_peer_runs_like_any_strategy_through_hydra(make_config, tmp_path: Path, locomo_path: Path) -> None:
    cfg = make_config(
        "dataset=locomo", f"dataset.path={locomo_path}", "dataset.sample_ids=[conv-26]",
        "context=autogen_token_limited", "context.max_tokens=1000",
    )  # fmt: skip
    metrics = json.loads((run_experiment(cfg, tmp_path / "run").run_dir / "metrics.json").read_text())
    assert metrics["context.tool_orphans"] == 0  # LoCoMo has no tool calls
    assert 0 < metrics["context.evidence_retention"] < 1
    assert metrics["calls"] > 0 and metrics["tokens.saved_ratio"] > 0.5


def test_llamaindex_summary_summary_counts_for_the_probes_that_carry_it(
    make_config, tmp_path: Path, locomo_path: Path
) -> None:
    """Its memory reports a summary once, when written; the probes at the dialogue's end still send it."""
    cfg = make_config(
        "dataset=locomo", f"dataset.path={locomo_path}", "dataset.sample_ids=[conv-30]",
        "context=llamaindex_summary", "context.max_tokens=1000",
    )  # fmt: skip
    run_dir = run_experiment(cfg, tmp_path / "run").run_dir
    metrics = json.loads((run_dir / "metrics.json").read_text())
    assert 0 < metrics["summary.count"] < metrics["calls"]  # only when the buffer overflows, not every call
    assert metrics["context.evidence_fed_to_summary"] > 0.5  # most evidence is older than the kept messages
    assert 0 < metrics["context.evidence_in_summary"] <= metrics["context.answer_coverage"]


def test_llamaindex_summary_through_litellm_over_http(
    locomo: list[list[Message]], openai_server_module, tmp_path: Path
) -> None:
    with openai_server_module.serve() as server:
        model = LitellmChatModel(
            model="openai/test-model", api_base=server.base_url, api_key="sk-test", cache_dir=str(tmp_path / "cache")
        )
        peer = LlamaIndexSummary(llm=model, max_tokens=200)
        out = peer.apply(locomo[0][:40])
        bodies = server.bodies("/v1/chat/completions")
    assert len(bodies) == 1  # one summary of what overflowed
    prompt = bodies[0]["messages"][-1]["content"]
    assert prompt.startswith('"Transcript so far: ') and locomo[0][0].text in prompt  # llama-index's own prompt
    assert out[0].role == "system" and out[0].text == " ".join(reversed(prompt.split()))  # the server's reply


@pytest.mark.parametrize(
    ("entry", "library"),
    [
        ("langchain_trim", "langchain-core"),
        ("llamaindex_buffer", "llama-index-core"),
        ("autogen_buffered", "autogen-core"),
    ],
)
def test_a_peer_run_records_its_librarys_version_and_the_next_run_does_not(
    make_config, tmp_path: Path, entry: str, library: str
) -> None:
    """Two runs in one process (as a sweep): each manifest names the peer libraries its own config drives."""
    import importlib.metadata

    sample = Path(__file__).resolve().parents[2] / "datasets" / "sample.jsonl"
    data = ("dataset=jsonl", f"dataset.path={sample}")
    peer = json.loads(
        (
            run_experiment(make_config(*data, f"context={entry}"), tmp_path / "peer").run_dir / "manifest.json"
        ).read_text()
    )
    own = json.loads(
        (
            run_experiment(make_config(*data, "context=sliding_window"), tmp_path / "own").run_dir / "manifest.json"
        ).read_text()
    )
    assert peer["versions"][library] == importlib.metadata.version(library)
    assert library not in own["versions"] and set(own["versions"]) < set(peer["versions"])
    assert own["versions"]["scipy"] == importlib.metadata.version("scipy")  # the summarizer's floats are scipy's


@pytest.mark.parametrize(
    "entry", ["langchain_trim", "llamaindex_buffer", "llamaindex_summary", "autogen_token_limited"]
)
def test_a_peers_budget_is_the_context_max_tokens_knob(make_config, entry: str) -> None:
    """One path per knob: `context.max_tokens` sets a peer's budget as it sets SLIDING_WINDOW's, nothing ignored."""
    from memlab.experiment import ignored_knobs, instantiate

    cfg = make_config(f"context={entry}", "context.max_tokens=1234")
    assert instantiate(cfg.context).strategy.max_tokens == 1234 and ignored_knobs(cfg) == {}
