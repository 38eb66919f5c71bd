"""The partition report: counts, shares, standard errors, points of traffic, the ceiling.

Arithmetic (the figures of a 60-failure sample at 62% acceptable):

- counts add to the sample; shares are integer percents that add to 100 (largest remainder);
- SE of a share p from a sample of n: sqrt(p(1-p)/n), one standard error (not a 95% interval);
  with `fpc`, times sqrt((N-n)/(N-1)) for a sample of n drawn without replacement from N failures;
- failing points = 100 x (1 - acceptable rate); reachable share = query-defect share of the
  sample; reachable points and unreachable points split the failing points by largest
  remainder, so they always add back; the ceiling is the reachable points, and the expected
  band a third to a half of it (low end rounded up, high end down: a band to quote, not to stretch).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from pydantic import BaseModel

from querywise.triage.buckets import (
    BUCKETS,
    QUERY_BUCKETS,
    REPAIR,
    UNREACHABLE_BUCKETS,
    Case,
)

__all__ = ["NOTES", "Population", "SampleInfo", "TriageReport", "binomial_se", "build_report", "largest_remainder"]

NOTES = [
    "The literal probe is a filter on failures, not a metric: over a whole corpus it is near 1.0 and means nothing.",
    "Shares are estimates from a sample: each carries one binomial standard error (not a 95% interval).",
    "A drop from the literal to the generated probe's rank is attributable to grammatical form only.",
]


def largest_remainder(values: Sequence[float], total: int) -> list[int]:
    """Integers that add to `total`, each the floor of its value plus one for the largest
    remainders (Hamilton's method; ties go to the earlier value).

    >>> largest_remainder([17.1, 20.9], 38)
    [17, 21]
    """
    floors = [math.floor(v) for v in values]
    short = total - sum(floors)
    order = sorted(range(len(values)), key=lambda i: (-(values[i] - floors[i]), i))
    for i in order[: max(0, short)]:
        floors[i] += 1
    return floors


def binomial_se(p: float, n: int, population: int | None = None) -> float:
    """sqrt(p(1-p)/n), times the finite-population factor sqrt((N-n)/(N-1)) when N is given."""
    if n <= 0:
        return 0.0
    se = math.sqrt(p * (1 - p) / n)
    if population is not None and population > 1 and population >= n:
        se *= math.sqrt((population - n) / (population - 1))
    return se


class Population(BaseModel):
    """What the sample was drawn from: the eval set's size and acceptable rate (when known)."""

    eval_total: int | None = None
    acceptable_rate: float | None = None
    failures: int | None = None  # failing questions in the eval set
    source: str = ""  # how these were obtained ("options", "eval file", "unknown")


class SampleInfo(BaseModel):
    """The `sample` object of the JSON report."""

    n: int
    population: Population
    failing_points: float | None  # percentage points of traffic that fail
    seed: int | None = None
    k: int
    mode: str
    se_method: str


class TriageReport(BaseModel):
    """The whole report; renderers only format it. `to_json` is the documented `--json` object."""

    sample: SampleInfo
    buckets: dict[str, int]
    shares: dict[str, int]  # integer percents of the sample, adding to 100
    se: dict[str, float]  # one SE of each bucket's share (a fraction)
    points: dict[str, float | None]  # share x failing points: each bucket's points of traffic
    groups: dict[str, int]  # counts of unreachable / ranking / generation / query_defect
    reachable_share: float
    reachable_se: float
    reachable_points: int | None
    unreachable_points: int | None
    ceiling_points: int | None
    expected_band: list[int | float] | None
    repair: dict[str, str]
    notes: list[str]
    cases: list[Case]
    seconds: float | None = None

    def to_json(self) -> dict[str, object]:
        """Exactly the keys `querywise triage --json` documents."""
        keys = ("sample", "buckets", "se", "reachable_share", "reachable_points", "unreachable_points",
                "ceiling_points", "expected_band", "cases")
        return self.model_dump(mode="json", include=set(keys))


def _band(ceiling: int) -> list[int | float]:
    low, high = math.ceil(ceiling / 3), math.floor(ceiling / 2)
    if low <= high:
        return [low, high]
    return [round(ceiling / 3, 1), round(ceiling / 2, 1)]  # too small a ceiling to round inwards


def build_report(
    cases: Sequence[Case], population: Population, *, k: int, mode: str, seed: int | None = None, fpc: bool = False,
) -> TriageReport:
    """Count, share and price the buckets of `cases` (one failure each)."""
    n = len(cases)
    counts = dict.fromkeys(BUCKETS, 0)
    for c in cases:
        counts[c.bucket] += 1
    shares = largest_remainder([100 * counts[b] / n for b in BUCKETS], 100) if n else [0] * len(BUCKETS)
    N = population.failures if fpc else None
    se = {b: round(binomial_se(counts[b] / n if n else 0.0, n, N), 4) for b in BUCKETS}
    q = sum(counts[b] for b in QUERY_BUCKETS)
    reachable = q / n if n else 0.0
    failing = None if population.acceptable_rate is None else round(100 * (1 - population.acceptable_rate), 6)
    reach_pts: int | None
    unreach_pts: int | None
    if failing is not None:
        reach_pts, unreach_pts = largest_remainder([reachable * failing, (1 - reachable) * failing], round(failing))
        band: list[int | float] | None = _band(reach_pts)
    else:
        reach_pts = unreach_pts = None
        band = None
    method = "binomial sqrt(p(1-p)/n)" + (
        f" x finite-population factor sqrt((N-n)/(N-1)), N = {N}" if N else " (no finite-population correction)")
    return TriageReport(
        sample=SampleInfo(n=n, population=population, failing_points=failing, seed=seed, k=k, mode=mode, se_method=method),
        buckets=counts,
        shares=dict(zip(BUCKETS, shares, strict=True)),
        se=se,
        points={b: (round(counts[b] / n * failing, 2) if failing is not None and n else None) for b in BUCKETS},
        groups={
            "unreachable": sum(counts[b] for b in UNREACHABLE_BUCKETS), "ranking": counts["ranking"],
            "generation": counts["generation"], "query_defect": q,
        },
        reachable_share=round(reachable, 4),
        reachable_se=round(binomial_se(reachable, n, N), 4),
        reachable_points=reach_pts,
        unreachable_points=unreach_pts,
        ceiling_points=reach_pts,
        expected_band=band,
        repair=dict(REPAIR),
        notes=list(NOTES),
        cases=list(cases),
    )


def population_of(n_rows: int, n_acceptable: int, n_failures: int, *, eval_total: int | None, acceptable: float | None) -> Population:
    """The population from the options when given (both), else from a full eval file (one
    with acceptable rows), else unknown (shares only, no points)."""
    if (eval_total is None) != (acceptable is None):
        raise ValueError("--eval-total and --acceptable go together")
    if eval_total is not None and acceptable is not None:
        if not 0 <= acceptable <= 1:
            raise ValueError(f"--acceptable is a rate between 0 and 1, got {acceptable}")
        return Population(eval_total=eval_total, acceptable_rate=acceptable,
                          failures=round(eval_total * (1 - acceptable)), source="options")
    if n_acceptable > 0:
        return Population(eval_total=n_rows, acceptable_rate=n_acceptable / n_rows, failures=n_failures, source="eval file")
    return Population(failures=n_failures, source="unknown: give --eval-total and --acceptable for points of traffic")
