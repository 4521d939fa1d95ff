"""Agent-loop metrics: memory tool calls, tool-schema tokens, retrieval per iteration, recall per channel.

Pure functions of a run's records. Nothing is reported for a run that offered no tool and
retrieved nothing, so the metrics of runs without long-term memory keep their exact keys.

- ``longterm.tool.saves|searches|dedup_rejected|errors``: memory tool calls by outcome
  (LONGTERM_TOOL events): a new memory stored, a search answered, a save refused as a repeat of
  a stored memory (the document's substring dedup), a call refused before anything ran;
- ``tool.calls``: tool calls the model made; ``tool.unknown``: those naming a tool no component
  offers (a misnamed tool, TOOL_UNKNOWN events), answered with an error result;
  ``tokens.tools.per_call|total``: the tokens the tool schemas add to each request (part of
  ``tokens.prompt.*``);
- ``longterm.retrievals``: auto-load retrievals during the conversation (retrieval events outside
  probes, less the tool searches), ``longterm.injected_tokens.per_call``: the injected block's
  tokens averaged over every call (0 for a call without one);
- ``session.forks`` / ``session.fork_entries``: histories forked at session ends (``hooks.sessions``)
  and the entries the branches hold;
- ``longterm.recall@10.<channel>``: recall@10 of the memories saved by one channel only
  (``auto_extract`` or ``agent_tool``), ranked as retrieved, over the same questions as
  ``longterm.recall@10``.

>>> from memlab.trace import Event
>>> tool_outcomes([Event("longterm.tool", {"outcome": "saved"}), Event("longterm.tool", {"outcome": "error"})])
{'longterm.tool.saves': 1, 'longterm.tool.searches': 0, 'longterm.tool.dedup_rejected': 0, 'longterm.tool.errors': 1}
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from memlab.metrics.family import metric_family
from memlab.metrics.longterm import EVIDENCE_KEY, EXCLUDED_CATEGORIES, recall_at_k
from memlab.sim.records import CallRecord, ProbeRecord, Record
from memlab.trace import LONGTERM_INJECT, LONGTERM_RETRIEVE, LONGTERM_TOOL, SESSION_FORK, TOOL_UNKNOWN, Event

SOURCES_KEY = "longterm.retrieved_sources"
CHANNELS = ("auto_extract", "agent_tool")
CHANNEL_K = 10
_OUTCOMES = {"saved": "saves", "searched": "searches", "duplicate": "dedup_rejected", "error": "errors"}


def tool_outcomes(events: Iterable[Event]) -> dict[str, int]:
    """``longterm.tool.<outcome>`` counts over LONGTERM_TOOL events.

    Args:
        events: Events of a run's records (`memlab.metrics.all_events`).
    """
    out = {f"longterm.tool.{name}": 0 for name in _OUTCOMES.values()}
    for e in events:
        if e.kind == LONGTERM_TOOL:
            out[f"longterm.tool.{_OUTCOMES[e.data['outcome']]}"] += 1
    return out


def channel_recall(probes: Iterable[ProbeRecord], k: int = CHANNEL_K) -> dict[str, float]:
    """``longterm.recall@k.<channel>``: recall of each channel's memories alone (see the module docstring).

    Args:
        probes: The run's probe records.
        k: How many retrieved memories count.
    """
    rows: dict[str, list[float]] = {c: [] for c in CHANNELS}
    for record in probes:
        results = record.results
        if SOURCES_KEY not in results or str(record.probe.category) in EXCLUDED_CATEGORIES:
            continue
        evidence = [e for e in record.probe.evidence if e]
        if not evidence:
            continue
        pairs = list(zip(results[EVIDENCE_KEY], results[SOURCES_KEY], strict=True))
        for channel in CHANNELS:
            mine = [list(ev) for ev, source in pairs if source == channel]
            rows[channel].append(recall_at_k(evidence, mine, k))
    return {f"longterm.recall@{k}.{c}": float(np.mean(v)) for c, v in rows.items() if v}


@metric_family
def agent_metrics(records: Sequence[Record]) -> dict[str, Any]:
    """Every metric of the module docstring that the run has something to measure for.

    Args:
        records: A run's records (memlab.sim: calls, probes, lifecycle), in replay order.
    """
    calls = [r for r in records if isinstance(r, CallRecord)]
    conversation = [e for r in records if not isinstance(r, ProbeRecord) for e in r.events]
    out: dict[str, Any] = {}
    tools = tool_outcomes(conversation)
    if any(c.tool_tokens for c in calls) or any(tools.values()):
        out.update(tools)
        out["tool.calls"] = sum(len(c.tool_calls) for c in calls)
        out["tool.unknown"] = sum(1 for e in conversation if e.kind == TOOL_UNKNOWN)
        tool_tokens = [c.tool_tokens for c in calls]
        out["tokens.tools.per_call"] = float(np.mean(tool_tokens)) if tool_tokens else 0.0
        out["tokens.tools.total"] = int(sum(tool_tokens))
        out.update(channel_recall(r for r in records if isinstance(r, ProbeRecord)))
    forks = [e for e in conversation if e.kind == SESSION_FORK]
    if forks:
        out["session.forks"] = len(forks)
        out["session.fork_entries"] = sum(int(e.data["entries"]) for e in forks)
    retrievals = sum(1 for e in conversation if e.kind == LONGTERM_RETRIEVE) - tools["longterm.tool.searches"]
    if retrievals > 0:
        out["longterm.retrievals"] = retrievals
        injected = [sum(int(e.data["tokens"]) for e in c.events if e.kind == LONGTERM_INJECT) for c in calls]
        out["longterm.injected_tokens.per_call"] = float(np.mean(injected)) if injected else 0.0
    return out
