"""`context.tool_orphans` from a real run's records, against the orphans counted directly on each request."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from requires import require

from memlab.context.peers import AutogenTokenLimited
from memlab.dialogues import load_tau_bench
from memlab.experiment import run_experiment
from memlab.messages import system
from memlab.units import orphans

require("autogen_core")

DIALOGUES = 12
BUDGET = 3_000


def rejected_requests(path: Path) -> int:
    """Replay by hand: at each assistant turn, the request is the policy plus the history before it."""
    strategy = AutogenTokenLimited(max_tokens=BUDGET)
    count = 0
    for d in load_tau_bench(path, max_dialogues=DIALOGUES):
        history = [system(d.system_prompt)] if d.system_prompt else []
        for m in d.messages():
            if m.role == "assistant":
                count += bool(orphans(strategy.apply(history)))
            history.append(m)
    return count


@pytest.mark.parametrize("context", ["autogen_token_limited", "sliding_window"])
def test_tool_orphans_counts_requests_a_provider_would_reject(
    make_config, tmp_path: Path, tau_bench_path: Path, context: str
) -> None:
    cfg = make_config(
        "dataset=tau_bench", f"dataset.path={tau_bench_path}", f"dataset.max_dialogues={DIALOGUES}",
        f"context={context}", f"context.max_tokens={BUDGET}",
    )  # fmt: skip
    metrics = json.loads((run_experiment(cfg, tmp_path / "run").run_dir / "metrics.json").read_text())
    expected = rejected_requests(tau_bench_path) if context == "autogen_token_limited" else 0
    assert metrics["context.tool_orphans"] == expected
    if context == "autogen_token_limited":
        assert expected > 0  # popping single messages from the middle splits tool-call units
