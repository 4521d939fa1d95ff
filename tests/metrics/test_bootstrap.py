"""The paired bootstrap against SciPy's and against a question-by-question loop over the same draws."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from memlab.metrics import paired_bootstrap
from memlab.metrics.bootstrap import resampled_means


def _scores(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Two systems over the same questions: 0/1 hits, the candidate a little better and correlated with the baseline."""
    rng = np.random.default_rng(seed)
    base = (rng.random(n) < 0.5).astype(float)
    flip = rng.random(n)
    cand = np.where(flip < 0.2, 1.0, np.where(flip > 0.95, 0.0, base))
    return cand, base


def test_matches_scipy_paired_percentile_bootstrap() -> None:
    cand, base = _scores(500, seed=1)
    ours = paired_bootstrap(cand, base, resamples=20_000, seed=3)[0]
    theirs = stats.bootstrap(
        (cand, base),
        lambda a, b, axis: a.mean(axis=axis) - b.mean(axis=axis),
        paired=True,
        vectorized=True,
        n_resamples=20_000,
        confidence_level=0.95,
        method="percentile",
        random_state=np.random.default_rng(7),
    ).confidence_interval
    assert ours.mean == pytest.approx(cand.mean() - base.mean(), abs=1e-12)
    # Two independent Monte Carlo estimates of the same quantiles: the SE of a 2.5% quantile is ~0.002 here.
    assert ours.low == pytest.approx(theirs.low, abs=0.006)
    assert ours.high == pytest.approx(theirs.high, abs=0.006)
    assert ours.low > 0  # the candidate's gain is resolved


def test_equals_a_loop_over_the_same_draws() -> None:
    """Vectorised means and percentiles are exactly what a loop over each draw's questions gives."""
    cand, base = _scores(50, seed=2)
    draws = np.random.default_rng(5).integers(0, 50, size=(1_000, 50))  # one chunk: the generator's first draws
    loop = np.array([sum(cand[i] - base[i] for i in rows) / 50 for rows in draws])
    assert np.allclose(resampled_means((cand - base)[:, None], 1_000, seed=5)[:, 0], loop, atol=1e-12)
    ci = paired_bootstrap(cand, base, resamples=1_000, seed=5)[0]
    assert (ci.low, ci.high) == pytest.approx(tuple(np.percentile(loop, [2.5, 97.5])), abs=1e-12)


def test_pairing_is_what_narrows_the_interval() -> None:
    """A constant +0.02 on noisy scores: paired, the interval is the point; unpaired it would span zero."""
    base = np.random.default_rng(0).random(200)
    ci = paired_bootstrap(base + 0.02, base, resamples=2_000)[0]
    assert ci.low == pytest.approx(0.02) and ci.high == pytest.approx(0.02)
    unpaired = stats.bootstrap(
        (base + 0.02, base),
        lambda a, b: a.mean() - b.mean(),
        vectorized=False,
        n_resamples=2_000,
        method="percentile",
        random_state=0,
    ).confidence_interval
    assert unpaired.low < 0 < unpaired.high


def test_columns_share_draws_and_the_seed_reproduces() -> None:
    rng = np.random.default_rng(4)
    base = rng.random(100)
    cand = base + rng.normal(0.05, 0.1, 100)
    both = paired_bootstrap(np.c_[cand, cand], np.c_[base, base], resamples=1_500, seed=9)
    assert both[0] == both[1]  # the same draws for every metric column
    alone = paired_bootstrap(cand, base, resamples=1_500, seed=9)[0]
    assert (alone.mean, alone.low, alone.high) == pytest.approx((both[0].mean, both[0].low, both[0].high), abs=1e-12)
    assert paired_bootstrap(cand, base, resamples=1_500, seed=9)[0] == alone  # the seed reproduces, bit for bit
    assert paired_bootstrap(cand, base, resamples=1_500, seed=10)[0].low != alone.low


def test_refuses_unpaired_or_empty_input() -> None:
    with pytest.raises(ValueError, match="same shape"):
        paired_bootstrap([1.0, 0.0], [1.0])
    with pytest.raises(ValueError, match="no questions"):
        paired_bootstrap([], [])
    with pytest.raises(ValueError, match="confidence"):
        paired_bootstrap([1.0], [0.0], confidence=95)
