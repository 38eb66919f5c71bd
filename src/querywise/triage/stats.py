"""The triage report's statistics and its one rounding rule.

- `half_up`: the rounding rule. Every figure is kept exact in the JSON and formatted by this one
  rule when printed: half away from zero at the stated number of places (62.5 -> 63, 1.52122 ->
  1.5 points at one place), never Python's round-half-to-even.
- `wilson`: the interval printed beside a share, Wilson's score interval at z = 1 (about 68%,
  the one-SE width the seed quotes). Unlike p ± SE it does not collapse to ± 0 at 0% or 100%: 3 of
  3 cases read as 75%..100%, not "100% ± 0.0".
- `cases_needed`: how many cases a wanted margin (one SE, in points of the failing share) needs,
  n = p(1-p)/m^2, with the finite-population correction n / (1 + (n-1)/N) when N failures are
  known, and what they cost at the seed's 3-5 minutes a case.
- `compare_buckets`: whether two buckets of one sample differ: a z test on the difference of two
  multinomial shares, var(p_a - p_b) = (p_a + p_b - (p_a - p_b)^2) / n, two-sided.
"""

from __future__ import annotations

import math
from decimal import ROUND_HALF_UP, Decimal

from pydantic import BaseModel

__all__ = ["MINUTES_PER_CASE", "BucketDifference", "CasePlan", "cases_needed", "compare_buckets", "half_up", "wilson"]

#: The seed's price of triaging one case by hand, in minutes (low, high).
MINUTES_PER_CASE = (3, 5)


def half_up(x: float, places: int = 0) -> float:
    """`x` rounded half away from zero at `places` decimals (the report's one rounding rule).

    >>> half_up(62.5), half_up(1.52122, 1), half_up(5.666, 0)
    (63.0, 1.5, 6.0)
    """
    q = Decimal(1).scaleb(-places)
    return float(Decimal(repr(x)).quantize(q, rounding=ROUND_HALF_UP))


def wilson(count: int, n: int, z: float = 1.0) -> tuple[float, float]:
    """Wilson's score interval for `count` of `n` at `z` standard errors (fractions).

    >>> [round(v, 3) for v in wilson(3, 3)]
    [0.75, 1.0]
    """
    if n <= 0:
        return 0.0, 1.0
    p = count / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z / denom * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return max(0.0, centre - half), min(1.0, centre + half)


class CasePlan(BaseModel):
    """How many cases a wanted margin needs, and their price."""

    margin_points: float  # one SE of a share, in percentage points of the failures
    share: float  # the share assumed (0.5: the widest)
    population: int | None  # failing questions to draw from (None: unknown, no correction)
    cases: int  # cases to triage
    cases_uncorrected: int  # without the finite-population correction
    hours: tuple[float, float]  # at MINUTES_PER_CASE
    rule: str


def cases_needed(margin_points: float, *, share: float = 0.5, population: int | None = None) -> CasePlan:
    """Cases for a one-SE margin of `margin_points` on a share near `share`.

    >>> cases_needed(6.4, share=0.45).cases, cases_needed(6.0, share=0.45, population=152).cases
    (61, 48)
    """
    if not 0 < margin_points < 100:
        raise ValueError(f"the margin is in percentage points, above 0 and below 100; got {margin_points:g}")
    if not 0 < share < 1:
        raise ValueError(f"the share is a fraction strictly between 0 and 1; got {share:g}")
    m = margin_points / 100
    n0 = share * (1 - share) / (m * m)
    n = n0 / (1 + (n0 - 1) / population) if population else n0
    cases = min(math.ceil(n - 1e-9), population) if population else math.ceil(n0 - 1e-9)
    low, high = MINUTES_PER_CASE
    rule = (
        f"n = p(1-p)/m^2 = {share:g} x {1 - share:g} / {m:g}^2 = {n0:.1f}"
        + (f", finite-population corrected n / (1 + (n-1)/N), N = {population}: {n:.1f}" if population else "")
        + f"; {low}-{high} minutes a case"
    )
    return CasePlan(
        margin_points=margin_points,
        share=share,
        population=population,
        cases=cases,
        cases_uncorrected=math.ceil(n0 - 1e-9),
        hours=(cases * low / 60, cases * high / 60),
        rule=rule,
    )


class BucketDifference(BaseModel):
    """Whether two buckets of one sample differ in size."""

    a: str
    b: str
    count_a: int
    count_b: int
    n: int
    difference: float  # p_a - p_b
    z: float | None
    p_value: float | None
    differ: bool  # at the 5% level, two-sided
    test: str


def compare_buckets(a: str, b: str, count_a: int, count_b: int, n: int, *, alpha: float = 0.05) -> BucketDifference:
    """The z test of `a` against `b`, two shares of one multinomial sample of `n`.

    >>> compare_buckets("ranking", "vocabulary", 13, 10, 60).differ
    False
    """
    test = "z test of two shares of one sample: var = (p_a + p_b - (p_a - p_b)^2) / n, two-sided, 5% level"
    if n <= 0:
        return BucketDifference(a=a, b=b, count_a=count_a, count_b=count_b, n=n, difference=0.0, z=None, p_value=None, differ=False, test=test)
    pa, pb = count_a / n, count_b / n
    var = (pa + pb - (pa - pb) ** 2) / n
    if var <= 0:
        return BucketDifference(
            a=a,
            b=b,
            count_a=count_a,
            count_b=count_b,
            n=n,
            difference=pa - pb,
            z=None,
            p_value=None,
            differ=False,
            test=test + " (no variance: both buckets empty)",
        )
    z = (pa - pb) / math.sqrt(var)
    p_value = math.erfc(abs(z) / math.sqrt(2))
    return BucketDifference(a=a, b=b, count_a=count_a, count_b=count_b, n=n, difference=pa - pb, z=z, p_value=p_value, differ=p_value < alpha, test=test)
