"""Paired bootstrap interval and permutation p-value."""

from __future__ import annotations

import numpy as np
import pytest

from querywise.evaluation.stats import SEED, paired_difference


def test_a_clear_improvement_is_significant_and_reproducible() -> None:
    rng = np.random.default_rng(1)
    a = rng.random(200)
    b = a + 0.1 + rng.normal(0, 0.05, 200)
    d1, d2 = paired_difference(a, b), paired_difference(a, b)
    assert d1 == d2 and d1.seed == SEED  # same seed, same interval
    assert d1.delta == pytest.approx(float((b - a).mean()))
    assert 0.08 < d1.low < d1.delta < d1.high < 0.12
    assert d1.significant and d1.direction == 1 and d1.p_value < 0.01


def test_noise_is_not_significant() -> None:
    rng = np.random.default_rng(2)
    a = rng.random(100)
    b = a + rng.normal(0, 0.05, 100) * rng.choice([-1, 1], 100)
    d = paired_difference(a, b)
    assert d.low < 0 < d.high and not d.significant and d.direction == 0


def test_pairs_with_a_missing_score_are_dropped() -> None:
    d = paired_difference([0.0, np.nan, 0.5], [1.0, 1.0, np.nan])
    assert d.n == 1 and d.delta == 1.0 and not d.significant  # one pair is no evidence


def test_a_worse_b_has_direction_minus_one() -> None:
    a = np.linspace(0.5, 1.0, 60)
    assert paired_difference(a, a - 0.2).direction == -1


def test_lengths_must_match() -> None:
    with pytest.raises(ValueError, match="same length"):
        paired_difference([1.0], [1.0, 2.0])


def test_a_mean_interval_holds_the_mean_and_narrows_with_more_cases() -> None:
    from querywise.evaluation.stats import mean_interval

    few = mean_interval([1.0, 0.0] * 10 + [float("nan")])  # a case with no score is dropped
    many = mean_interval([1.0, 0.0] * 500)
    assert few[0] == many[0] == 0.5
    assert few[1] < 0.5 < few[2] and many[1] < 0.5 < many[2]
    assert (many[2] - many[1]) < (few[2] - few[1]) / 3
    assert mean_interval([]) == (0.0, 0.0, 0.0) and mean_interval([0.7] * 5) == (0.7, 0.7, 0.7)
