"""The report's statistics: one rounding rule, honest intervals, planning, and a test between buckets."""

from __future__ import annotations

import math

import pytest

from querywise.triage.report import band
from querywise.triage.stats import cases_needed, compare_buckets, half_up, wilson


def test_one_rounding_rule_half_up() -> None:
    assert (half_up(62.5), half_up(63.5), half_up(1.52122, 1), half_up(2.675, 2)) == (63.0, 64.0, 1.5, 2.68)


def test_a_small_whole_bucket_has_an_interval_not_plus_minus_zero() -> None:
    lo, hi = wilson(3, 3)
    assert (round(lo, 3), hi) == (0.75, 1.0)
    lo, hi = wilson(0, 60)
    assert lo == 0.0 and 0 < hi < 0.05
    lo, hi = wilson(27, 60)  # near p +- one SE for a large bucket
    assert lo == pytest.approx(0.45 - 0.064, abs=0.005) and hi == pytest.approx(0.45 + 0.064, abs=0.005)


def test_band_is_honest_low_and_rounded_down_high() -> None:
    assert band(0.45 * 38) == [6, 8]  # the seed: 5.7 -> 6, 8.55 -> 8
    assert band(13) == [4, 6]  # a third is 4.33: rounded honestly, not up
    assert band(1.0) == [0.3, 0.5] and band(0) == [0, 0]


def test_cases_a_margin_needs_and_their_price() -> None:
    plan = cases_needed(6.4, share=0.45)
    assert plan.cases == math.ceil(0.45 * 0.55 / 0.064**2) == 61
    assert plan.hours == (61 * 3 / 60, 61 * 5 / 60)
    corrected = cases_needed(6.0, share=0.45, population=152)
    assert corrected.cases < corrected.cases_uncorrected and "N = 152" in corrected.rule
    with pytest.raises(ValueError, match="percentage points"):
        cases_needed(0)


def test_two_buckets_differ_by_a_test_not_by_overlapping_intervals() -> None:
    same = compare_buckets("ranking", "vocabulary", 13, 10, 60)
    assert not same.differ and same.p_value is not None and same.p_value > 0.05
    apart = compare_buckets("ranking", "filler", 27, 3, 60)
    assert apart.differ and apart.z is not None and apart.z > 0
    assert not compare_buckets("a", "b", 0, 0, 10).differ
