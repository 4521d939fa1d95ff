"""Requests a provider would reject: a tool result without its call, or a call without all its results.

memlab's strategies never make such a request (they cut between tool-call units); a peer may.
The context stage reports the orphans of every request it builds (CONTEXT_APPLY `tool_orphans`).

>>> from memlab.trace import Event
>>> tool_orphan_metrics([Event("context.apply", {"tool_orphans": 2}), Event("context.apply", {"tool_orphans": 0})])
{'context.tool_orphans': 1}
"""

from __future__ import annotations

from collections.abc import Iterable

from memlab.metrics.family import metric_family
from memlab.trace import CONTEXT_APPLY, Event


@metric_family
def tool_orphan_metrics(events: Iterable[Event]) -> dict[str, int]:
    """`context.tool_orphans`: requests (calls and probes) whose context holds at least one orphan.

    Args:
        events: Events of a run's records (`memlab.metrics.all_events`).
    """
    return {
        "context.tool_orphans": sum(
            1 for e in events if e.kind == CONTEXT_APPLY and int(e.data.get("tool_orphans") or 0) > 0
        )
    }
