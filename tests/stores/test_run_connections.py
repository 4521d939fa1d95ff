"""A run closes the store connections it opened when its replay ends, so a sweep's later runs in the same process
do not hold them (each held its long-term and history stores' pools until the collector freed them: +3 PostgreSQL
connections a run, released only by a full collection)."""

from __future__ import annotations

import gc
from pathlib import Path

import pytest
from sqlalchemy import event
from sqlalchemy.pool import Pool

from memlab.experiment import run_experiment


@pytest.mark.parametrize(
    "how", ["sim.workers=1", "sim.workers=2", "sim.stop_after_session=1"], ids=["one", "workers", "checkpointed"]
)
def test_a_run_leaves_no_store_connection_open(make_config, tmp_path: Path, how: str) -> None:
    """Counted by SQLAlchemy's pool events, with the collector off so that only an explicit close counts."""
    opened: list[object] = []
    closed: list[object] = []

    def on_connect(connection: object, record: object) -> None:
        opened.append(connection)

    def on_close(connection: object, record: object) -> None:
        closed.append(connection)

    cfg = make_config(
        "longterm=chat", "debug=default", "agent_memory=hybrid", "store=sqlite", f"store.path={tmp_path / 'db.sqlite'}",
        how, "sim.progress=false", "report.plots=false",
    )  # fmt: skip
    event.listen(Pool, "connect", on_connect)
    event.listen(Pool, "close", on_close)
    gc.disable()
    try:
        run_experiment(cfg, tmp_path / "run")
        assert opened and len(closed) == len(opened)  # in this process: the scope, the checkpoint, the stores
    finally:
        gc.enable()
        event.remove(Pool, "connect", on_connect)
        event.remove(Pool, "close", on_close)
