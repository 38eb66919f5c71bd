"""The report arithmetic: counts, shares, SEs, points, ceiling and band."""

from __future__ import annotations

import math

import pytest

from querywise.triage import (
    BUCKETS,
    Case,
    Evidence,
    Location,
    Population,
    build_report,
    largest_remainder,
    population_of,
)


def _cases(counts: dict[str, int]) -> list[Case]:
    ev = Evidence(location=Location(method="chunk_id", chunk_id="c"))
    return [Case(id=f"{b}{i}", question="q", bucket=b, evidence=ev) for b, n in counts.items() for i in range(n)]  # type: ignore[arg-type]


REFERENCE = {"absent": 4, "extraction_noise": 3, "chunk_boundary": 4, "ranking": 13, "generation": 9,
             "vocabulary": 10, "compound": 6, "referent": 8, "filler": 3}
POP = Population(eval_total=400, acceptable_rate=0.62, failures=152)


def test_largest_remainder() -> None:
    assert largest_remainder([17.1, 20.9], 38) == [17, 21]
    assert largest_remainder([100 / 3] * 3, 100) == [34, 33, 33]
    assert largest_remainder([0.0, 0.0], 0) == [0, 0]


@pytest.mark.parametrize("counts", [REFERENCE, {"ranking": 1, "generation": 1, "filler": 1},
                                    {"absent": 7, "vocabulary": 5, "referent": 5, "unlabelled_query_defect": 2}])
def test_counts_add_to_the_sample_and_shares_to_100(counts: dict[str, int]) -> None:
    r = build_report(_cases(counts), POP, k=50, mode="hybrid")
    assert set(r.buckets) == set(BUCKETS)
    assert sum(r.buckets.values()) == r.sample.n == sum(counts.values())
    assert sum(r.shares.values()) == 100
    assert r.reachable_points is not None and r.unreachable_points is not None
    assert r.reachable_points + r.unreachable_points == 38
    assert sum(v for v in r.points.values() if v is not None) == pytest.approx(38, abs=0.06)


def test_reference_figures() -> None:
    r = build_report(_cases(REFERENCE), POP, k=50, mode="hybrid")
    assert r.reachable_share == 0.45 and r.groups == {"unreachable": 11, "ranking": 13, "generation": 9, "query_defect": 27}
    assert (r.reachable_points, r.unreachable_points, r.ceiling_points, r.expected_band) == (17, 21, 17, [6, 8])
    assert r.shares["filler"] == 5 and r.points["filler"] == 1.9
    assert r.reachable_se == pytest.approx(0.0642, abs=1e-4)  # sqrt(.45 x .55 / 60)
    assert r.se["ranking"] == pytest.approx(0.0532, abs=1e-4)  # sqrt(13/60 x 47/60 / 60)
    assert r.se["degenerate_embedding"] == 0.0
    fpc = build_report(_cases(REFERENCE), POP, k=50, mode="hybrid", fpc=True)
    assert fpc.reachable_se == pytest.approx(0.0642 * math.sqrt(92 / 151), abs=1e-4)


def test_json_has_exactly_the_documented_keys() -> None:
    data = build_report(_cases(REFERENCE), POP, k=50, mode="hybrid").to_json()
    assert list(data) == ["sample", "buckets", "se", "reachable_share", "reachable_points", "unreachable_points",
                          "ceiling_points", "expected_band", "cases"]
    assert set(data["cases"][0]) == {"id", "question", "bucket", "evidence"}  # type: ignore[index]


def test_small_ceiling_band_and_unknown_population() -> None:
    r = build_report(_cases({"filler": 1, "ranking": 19}), POP, k=50, mode="hybrid")
    assert r.ceiling_points == 2 and r.expected_band == [1, 1]  # 0.67 up, 1.0 down
    r = build_report(_cases({"filler": 1, "ranking": 37}), POP, k=50, mode="hybrid")
    assert r.ceiling_points == 1 and r.expected_band == [0.3, 0.5]  # too small to round inwards
    unknown = build_report(_cases(REFERENCE), Population(failures=60), k=50, mode="hybrid")
    assert unknown.reachable_points is None and unknown.expected_band is None and unknown.reachable_share == 0.45


def test_population_from_options_or_eval_file() -> None:
    assert population_of(60, 0, 60, eval_total=400, acceptable=0.62).failures == 152
    full = population_of(400, 248, 152, eval_total=None, acceptable=None)
    assert (full.eval_total, full.acceptable_rate, full.failures) == (400, 0.62, 152)
    assert population_of(60, 0, 60, eval_total=None, acceptable=None).acceptable_rate is None
    with pytest.raises(ValueError, match="go together"):
        population_of(60, 0, 60, eval_total=400, acceptable=None)
    with pytest.raises(ValueError, match="between 0 and 1"):
        population_of(60, 0, 60, eval_total=400, acceptable=62)
