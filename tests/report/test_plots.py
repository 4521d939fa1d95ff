"""The report's plots lay out without matplotlib collapsing an axes, on the inputs that once collapsed one."""

from __future__ import annotations

import io

import numpy as np
import pandas as pd
import pytest
from matplotlib import image

from memlab.metrics.latency import LATENCY_PARTS, LATENCY_STAGES
from memlab.report import plots

STAGES = [*LATENCY_STAGES, *LATENCY_PARTS]  # every stage and part a latency.csv may hold


def _latency_csv(stages: list[str], scale: float = 1.0) -> pd.DataFrame:
    """A latency.csv frame: each stage timed from tens of µs to tens of ms, as a long-term run's are."""
    values = np.geomspace(20, 90_000, 9) * scale
    return pd.DataFrame([(s, int(v)) for s in stages for v in values], columns=["stage", "latency_us"])


# matplotlib's own warnings (a collapsed axes) are errors; an object another test left to the garbage collector
# raises its ResourceWarning wherever it is freed, here too, and is the business of that test (tests/peers has two)
@pytest.mark.filterwarnings("error", "ignore::pytest.PytestUnraisableExceptionWarning")
@pytest.mark.parametrize(
    "samples",
    [
        # `memlab ablate`'s run report: the six long-term stages of one run named after the ablation
        {"ablate_longterm-full": _latency_csv([s for s in STAGES if s != "context"])},
        {"ablate_longterm-full": _latency_csv(STAGES)},
        {f"longterm-variant-{i}": _latency_csv(STAGES, 1 + i) for i in range(6)},  # a comparison of six runs
        {"no timings": _latency_csv([])},
    ],
    ids=["ablation-run", "all-stages", "comparison", "empty"],
)
def test_latency_boxes_lay_out_every_stage_without_a_collapsed_axes(samples: dict[str, pd.DataFrame]) -> None:
    png = plots.latency_boxes(samples)
    pixels = image.imread(io.BytesIO(png), format="png")
    stages = {s for frame in samples.values() for s in frame["stage"]}
    assert pixels.shape[0] >= 100 * max(1, len(stages))  # one readable row per stage, not squeezed into one
