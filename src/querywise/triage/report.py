"""The partition report: counts, shares, standard errors, points of traffic, the ceiling.

Arithmetic (the figures of a 60-failure sample at 62% acceptable):

- counts add to the sample;
- SE of a share p from a sample of n: sqrt(p(1-p)/n), one standard error (not a 95% interval);
  with `fpc`, times sqrt((N-n)/(N-1)) for a sample of n drawn without replacement from N failures;
- failing points = 100 x (1 - acceptable rate); reachable share = query-defect share of the
  sample (all n triaged failures in the denominator; suspect labels are never reachable);
- one rounding rule (`ROUNDING`): shares are whole percents adding to 100 and points whole
  points of traffic adding to the failing points rounded to a whole point; each total is split
  first into its three parts -- reachable (query defects), suspect labels, and the rest
  (index side, chunker, ranking, generation) -- then each part into its buckets, all by largest
  remainder, so every printed sum adds up and a part equals the sum of its buckets;
- reachable points + unreachable points = the failing points (unreachable = suspect labels +
  the rest); the ceiling is the reachable points, and the expected band a third to a half of the
  exact ceiling, as the seed quotes it: the pessimistic (low) end rounded honestly, half up
  (17.1 / 3 = 5.7 -> 6), the optimistic (high) end rounded down (17.1 / 2 = 8.55 -> 8), so the
  band is never stretched upwards; 13 / 3 = 4.33 -> 4, 13 / 2 = 6.5 -> 6.
- the JSON keeps every figure exact as well (`exact`: failing, reachable and unreachable points,
  the ceiling, the band's ends, the shares as fractions); printed figures are formatted from them
  by the one rule of `stats.half_up`. Beside each share: Wilson's interval at one SE
  (`intervals`), which stays honest for a 3-case bucket at 100%.
- `ranking_cues`: the ranking cases on which a query-side detector also fired, and their share of
  the ranking cases (an upper bound on what the query layer adds there); `difference`: whether the
  two largest buckets differ (`stats.compare_buckets`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from pydantic import BaseModel

from querywise.triage.buckets import (
    BUCKETS,
    LABEL_BUCKETS,
    QUERY_BUCKETS,
    REPAIR,
    UNREACHABLE_BUCKETS,
    Bucket,
    TriageCase,
    has_query_cue,
)
from querywise.triage.options import DEFAULT_CONTEXT_K, TriageOptions
from querywise.triage.stats import BucketDifference, compare_buckets, half_up, wilson

__all__ = [
    "INTERVAL_METHOD",
    "NOTES",
    "PARTS",
    "ROUNDING",
    "Population",
    "SampleInfo",
    "TriageReport",
    "band",
    "binomial_se",
    "build_report",
    "largest_remainder",
    "split_whole",
]

#: The three parts every total is split into before its buckets, in this order.
PARTS: tuple[tuple[str, tuple[Bucket, ...]], ...] = (
    ("reachable", QUERY_BUCKETS),
    ("suspect_label", LABEL_BUCKETS),
    ("rest", (*UNREACHABLE_BUCKETS, "routing", "ranking", "generation")),
)
ROUNDING = (
    "Rounding: one rule. The JSON keeps exact values (`exact`, `se`, `intervals`); a printed figure is rounded half "
    "up (62.5 -> 63). Shares are whole percents of the sample (adding to 100) and points whole percentage points "
    "of traffic (adding to the failing points rounded half up); each total is split into reachable, suspect labels "
    "and the rest, then into buckets, by largest remainder, so every sum adds up as printed. The expected band's "
    "low end is a third of the exact ceiling rounded half up, its high end half of it rounded down."
)
INTERVAL_METHOD = "Wilson score interval at z = 1 (one SE, about 68%)"

NOTES = [
    "The literal probe is a filter on failures, not a metric: over a whole corpus it is near 1.0 and means nothing.",
    "Shares are estimates from a sample: each carries one binomial standard error (not a 95% interval) and Wilson's "
    "interval at one SE, which stays honest for small buckets (3 of 3 reads as 75-100%, not 100% ± 0).",
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
    context_k: int = DEFAULT_CONTEXT_K  # generation = the gold within the top context_k
    mode: str
    se_method: str
    rounding: str = ROUNDING
    k_rule: str = ""  # how k and context_k were chosen (`TriageOptions.resolve`)
    interval_method: str = INTERVAL_METHOD

    @property
    def options(self) -> TriageOptions:
        """The options the report was made with (what `relabel` rebuilds it with)."""
        return TriageOptions(
            k=self.k,
            context_k=self.context_k,
            mode=self.mode,
            sample=max(self.n, 1) if self.seed is not None else None,
            seed=self.seed or 0,
            fpc="finite-population factor" in self.se_method,
            k_rule=self.k_rule,
        )


class Exact(BaseModel):
    """The report's figures before any rounding."""

    shares: dict[str, float]  # count / n per bucket
    reachable_share: float
    failing_points: float | None = None
    reachable_points: float | None = None
    unreachable_points: float | None = None
    ceiling_points: float | None = None
    expected_band: list[float] | None = None  # [ceiling / 3, ceiling / 2]


class RankingCues(BaseModel):
    """Ranking cases on which a query-side detector also fired: an upper bound on what the query
    layer adds among them (ranking is decided before any query defect)."""

    ranking: int
    with_cue: int
    share: float | None  # with_cue / ranking (None: no ranking case)
    by_kind: dict[str, int] = {}


class TriageReport(BaseModel):
    """The whole report; renderers only format it. `to_json` is the documented `--json` object."""

    sample: SampleInfo
    buckets: dict[str, int]
    shares: dict[str, int]  # whole percents of the sample, adding to 100 (see ROUNDING)
    se: dict[str, float]  # one SE of each bucket's share (a fraction)
    points: dict[str, int | None]  # each bucket's whole points of traffic, adding to `failing_whole`
    groups: dict[str, int]  # counts of unreachable / ranking / generation / suspect_label / query_defect
    part_shares: dict[str, int] = {}  # reachable / suspect_label / rest, whole percents adding to 100
    part_points: dict[str, int] | None = None  # the same parts in whole points, adding to `failing_whole`
    part_se: dict[str, float] = {}  # one SE of each part's share
    failing_whole: int | None = None  # the failing points rounded to a whole point
    reachable_share: float
    reachable_se: float
    reachable_points: int | None
    unreachable_points: int | None
    ceiling_points: int | None
    expected_band: list[int | float] | None
    repair: dict[str, str]
    notes: list[str]
    prices: dict[str, str] = {}  # bucket -> what its repair costs in this deployment, where it knows (triage.prices)
    cases: list[TriageCase]
    seconds: float | None = None
    exact: Exact | None = None
    intervals: dict[str, list[float]] = {}  # Wilson's interval of each bucket's share (fractions)
    ranking_cues: RankingCues | None = None
    difference: BucketDifference | None = None  # the two largest buckets, tested
    warnings: list[str] = []  # the failures made against another index, a context other than the file's rule
    probes_not_built: int = 0  # cases whose generated probe could not be built (no LLM, no main clause to ask)

    def to_json(self) -> dict[str, object]:
        """Exactly the keys `querywise triage --json` documents."""
        keys = ("sample", "buckets", "shares", "se", "points", "part_shares", "part_points", "failing_whole", "reachable_share",
                "reachable_points", "unreachable_points", "ceiling_points", "expected_band", "cases",
                "exact", "intervals", "ranking_cues", "difference", "warnings", "probes_not_built")
        return self.model_dump(mode="json", include=set(keys))


def split_whole(total: int, counts: dict[Bucket, int]) -> tuple[dict[str, int], dict[Bucket, int]]:
    """`total` split in proportion to `counts`: first into `PARTS`, then each part into its
    buckets, every split by largest remainder (whole numbers that add up at both levels).

    >>> split_whole(38, {"filler": 27, "ranking": 33})[0]
    {'reachable': 17, 'suspect_label': 0, 'rest': 21}
    """
    n = sum(counts.values())
    if n == 0:
        return {name: 0 for name, _ in PARTS}, dict.fromkeys(BUCKETS, 0)
    part_totals = largest_remainder([total * sum(counts.get(b, 0) for b in bs) / n for _, bs in PARTS], total)
    per_bucket: dict[Bucket, int] = {}
    for (_, bs), whole in zip(PARTS, part_totals, strict=True):
        per_bucket.update(zip(bs, largest_remainder([total * counts.get(b, 0) / n for b in bs], whole), strict=True))
    return {name: v for (name, _), v in zip(PARTS, part_totals, strict=True)}, {b: per_bucket[b] for b in BUCKETS}


def band(ceiling: float) -> list[int | float]:
    """A third to a half of the exact `ceiling`: the low end rounded half up, the high end down
    (one decimal each when the ceiling is too small for a whole point between them).

    >>> band(17.1), band(13.0), band(12.65 * 0)
    ([6, 8], [4, 6], [0, 0])
    """
    low, high = int(half_up(ceiling / 3)), math.floor(ceiling / 2 + 1e-9)
    if low <= high and (high > 0 or ceiling <= 0):
        return [low, high]
    return [half_up(ceiling / 3, 1), math.floor(ceiling / 2 * 10 + 1e-9) / 10]


def build_report(cases: Sequence[TriageCase], population: Population, options: TriageOptions, *, warnings: Sequence[str] = ()) -> TriageReport:
    """Count, share and price the buckets of `cases` (one failure each), classified with `options`
    (resolved: their depths, mode and sample are stated in the report; `fpc`: the finite-population
    factor); `warnings` are stated with it."""
    (k, context_k), mode = options.depths, options.mode
    seed = options.seed if options.sample is not None else None
    fpc = options.fpc
    n = len(cases)
    counts: dict[Bucket, int] = dict.fromkeys(BUCKETS, 0)
    for c in cases:
        counts[c.bucket] += 1
    part_shares, bucket_shares = split_whole(100 if n else 0, counts)
    N = population.failures if fpc else None
    se = {b: round(binomial_se(counts[b] / n if n else 0.0, n, N), 4) for b in BUCKETS}
    part_se = {name: round(binomial_se(sum(counts[b] for b in bs) / n if n else 0.0, n, N), 4) for name, bs in PARTS}
    q = sum(counts[b] for b in QUERY_BUCKETS)
    reachable = q / n if n else 0.0
    # exact up to binary noise (100 x (1 - 0.62) is 37.99999999999999 in floating point)
    failing = None if population.acceptable_rate is None else round(100 * (1 - population.acceptable_rate), 10)
    reach_pts: int | None
    unreach_pts: int | None
    part_points: dict[str, int] | None = None
    points: dict[str, int | None] = dict.fromkeys(BUCKETS, None)
    failing_whole: int | None = None
    expected: list[int | float] | None = None
    if failing is not None:
        failing_whole = int(half_up(failing))
        part_points, bucket_points = split_whole(failing_whole, counts)
        points = {str(b): v for b, v in bucket_points.items()} if n else points
        reach_pts = part_points["reachable"]
        unreach_pts = failing_whole - reach_pts  # suspect labels and the rest: not reachable by the query layer
        expected = band(reachable * failing)
    else:
        reach_pts = unreach_pts = None
    method = "binomial sqrt(p(1-p)/n)" + (
        f" x finite-population factor sqrt((N-n)/(N-1)), N = {N}" if N else " (no finite-population correction)")
    return TriageReport(
        sample=SampleInfo(
            n=n, population=population, failing_points=failing, seed=seed, k=k, context_k=context_k, mode=mode, se_method=method, k_rule=options.k_rule
        ),
        buckets=dict(counts),
        shares=dict(bucket_shares),
        se=se,
        points=dict(points),
        groups={
            "unreachable": sum(counts[b] for b in UNREACHABLE_BUCKETS), "ranking": counts["ranking"],
            "generation": counts["generation"], "suspect_label": counts["suspect_label"], "query_defect": q,
        },
        part_shares=part_shares,
        part_points=part_points,
        part_se=part_se,
        failing_whole=failing_whole,
        reachable_share=round(reachable, 4),
        reachable_se=round(binomial_se(reachable, n, N), 4),
        reachable_points=reach_pts,
        unreachable_points=unreach_pts,
        ceiling_points=reach_pts,
        expected_band=expected,
        repair=dict(REPAIR),
        notes=list(NOTES),
        cases=list(cases),
        exact=Exact(
            shares={b: counts[b] / n if n else 0.0 for b in BUCKETS},
            reachable_share=reachable,
            failing_points=failing,
            reachable_points=None if failing is None else reachable * failing,
            unreachable_points=None if failing is None else (1 - reachable) * failing,
            ceiling_points=None if failing is None else reachable * failing,
            expected_band=None if failing is None else [reachable * failing / 3, reachable * failing / 2],
        ),
        intervals={b: list(wilson(counts[b], n)) for b in BUCKETS},
        ranking_cues=_ranking_cues(cases),
        difference=_largest_two(counts, n),
        warnings=list(warnings),
        probes_not_built=sum(c.evidence.generated_by == "none" for c in cases),
    )


def _ranking_cues(cases: Sequence[TriageCase]) -> RankingCues:
    ranking = [c for c in cases if c.bucket == "ranking"]
    cued = [c for c in ranking if has_query_cue(c)]
    kinds: dict[str, int] = {}
    for c in cued:
        kind = str(c.evidence.query.suggested) if c.evidence.query is not None else ""
        kinds[kind] = kinds.get(kind, 0) + 1
    return RankingCues(ranking=len(ranking), with_cue=len(cued), share=len(cued) / len(ranking) if ranking else None, by_kind=kinds)


def _largest_two(counts: dict[Bucket, int], n: int) -> BucketDifference | None:
    """The test of the two largest buckets (ties: bucket order), when two are non-empty."""
    top = sorted((b for b in BUCKETS if counts[b]), key=lambda b: -counts[b])[:2]
    if len(top) < 2:
        return None
    return compare_buckets(top[0], top[1], counts[top[0]], counts[top[1]], n)


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
