"""Paired differences with uncertainty: bootstrap confidence interval and sign-flip permutation test.

Both resample *cases*, keeping each case's pair (A, B) together, so the per-case variation that
A and B share cancels. Randomness comes from `numpy.random.default_rng(seed)` with the fixed,
stated seed `SEED` unless another is passed: the same inputs always give the same interval.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from pydantic import BaseModel, ConfigDict

__all__ = ["N_RESAMPLES", "SEED", "PairedDiff", "mean_interval", "paired_difference"]

SEED = 42
N_RESAMPLES = 2000
_CHUNK = 250  # resamples drawn at a time, so memory stays small for large case sets


class PairedDiff(BaseModel):
    """B minus A over the same cases: mean, 95% bootstrap interval, permutation p-value."""

    model_config = ConfigDict(frozen=True)
    n: int
    a: float
    b: float
    delta: float
    low: float
    high: float
    p_value: float
    seed: int
    resamples: int

    @property
    def significant(self) -> bool:
        """The interval excludes zero (and p < 0.05, which the two agree on almost always)."""
        return self.n > 1 and (self.low > 0 or self.high < 0) and self.p_value < 0.05

    @property
    def direction(self) -> int:
        """+1 significantly better, -1 significantly worse, 0 not distinguishable."""
        return 0 if not self.significant else (1 if self.delta > 0 else -1)


def paired_difference(
    a: Sequence[float] | np.ndarray,
    b: Sequence[float] | np.ndarray,
    *,
    confidence: float = 0.95,
    resamples: int = N_RESAMPLES,
    seed: int = SEED,
) -> PairedDiff:
    """Mean of b - a with a percentile bootstrap interval and a two-sided sign-flip p-value.

    Pairs where either side is NaN (no score) are dropped.

    >>> d = paired_difference([0.0, 0.0, 0.0, 0.0], [1.0, 1.0, 1.0, 1.0])
    >>> (d.delta, d.low, d.high)
    (1.0, 1.0, 1.0)
    """
    x, y = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if x.shape != y.shape:
        raise ValueError(f"paired scores need the same length, got {x.size} and {y.size}")
    keep = ~(np.isnan(x) | np.isnan(y))
    x, y = x[keep], y[keep]
    n = int(x.size)
    if n == 0:
        return PairedDiff(n=0, a=0.0, b=0.0, delta=0.0, low=0.0, high=0.0, p_value=1.0, seed=seed, resamples=0)
    d = y - x
    delta = float(d.mean())
    rng = np.random.default_rng(seed)
    means, flipped = [], []
    for start in range(0, resamples, _CHUNK):
        size = min(_CHUNK, resamples - start)
        means.append(d[rng.integers(0, n, size=(size, n))].mean(axis=1))
        flipped.append((d * rng.choice((-1.0, 1.0), size=(size, n))).mean(axis=1))
    boot, null = np.concatenate(means), np.concatenate(flipped)
    tail = (1 - confidence) / 2
    low, high = np.quantile(boot, [tail, 1 - tail])
    # +1 in numerator and denominator: the observed assignment is one of the permutations.
    p = (1 + int((np.abs(null) >= abs(delta) - 1e-12).sum())) / (resamples + 1)
    return PairedDiff(
        n=n, a=float(x.mean()), b=float(y.mean()), delta=delta, low=float(low), high=float(high),
        p_value=float(min(1.0, p)), seed=seed, resamples=resamples,
    )


def mean_interval(values: Sequence[float] | np.ndarray, *, confidence: float = 0.95, resamples: int = N_RESAMPLES,
                  seed: int = SEED) -> tuple[float, float, float]:
    """(mean, low, high): the mean of `values` (NaNs dropped) with a percentile bootstrap interval
    over the cases, the same resampling as `paired_difference`.

    >>> mean_interval([1.0, 1.0, 1.0])
    (1.0, 1.0, 1.0)
    """
    x = np.asarray(values, dtype=np.float64)
    x = x[~np.isnan(x)]
    if x.size == 0:
        return 0.0, 0.0, 0.0
    rng = np.random.default_rng(seed)
    boot = np.concatenate([x[rng.integers(0, x.size, size=(min(_CHUNK, resamples - start), x.size))].mean(axis=1)
                           for start in range(0, resamples, _CHUNK)])
    tail = (1 - confidence) / 2
    low, high = np.quantile(boot, [tail, 1 - tail])
    return float(x.mean()), float(low), float(high)
