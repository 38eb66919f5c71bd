"""The report arithmetic: counts, shares, SEs, points, ceiling and band."""

from __future__ import annotations

import math

import pytest

from querywise.triage import (
    BUCKETS,
    Evidence,
    Location,
    Population,
    TriageCase,
    TriageOptions,
    build_report,
    largest_remainder,
    population_of,
)
from querywise.triage.buckets import QUERY_BUCKETS
from querywise.triage.report import split_whole


def _cases(counts: dict[str, int]) -> list[TriageCase]:
    ev = Evidence(location=Location(method="chunk_id", chunk_id="c"))
    return [TriageCase(id=f"{b}{i}", question="q", bucket=b, evidence=ev) for b, n in counts.items() for i in range(n)]  # type: ignore[arg-type]


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
    r = build_report(_cases(counts), POP, TriageOptions(k=50, mode="hybrid"))
    assert set(r.buckets) == set(BUCKETS)
    assert sum(r.buckets.values()) == r.sample.n == sum(counts.values())
    assert sum(r.shares.values()) == 100
    assert r.reachable_points is not None and r.unreachable_points is not None
    assert r.reachable_points + r.unreachable_points == 38
    assert sum(v for v in r.points.values() if v is not None) == 38


def test_reference_figures() -> None:
    r = build_report(_cases(REFERENCE), POP, TriageOptions(k=50, mode="hybrid"))
    assert r.reachable_share == 0.45
    assert r.groups == {"unreachable": 11, "ranking": 13, "generation": 9, "suspect_label": 0, "query_defect": 27}
    assert (r.reachable_points, r.unreachable_points, r.ceiling_points, r.expected_band) == (17, 21, 17, [6, 8])
    assert r.shares["filler"] == 5 and r.points["filler"] == 2  # 1.9 points, in whole points
    assert r.sample.context_k == 10 and "largest remainder" in r.sample.rounding
    assert r.reachable_se == pytest.approx(0.0642, abs=1e-4)  # sqrt(.45 x .55 / 60)
    assert r.se["ranking"] == pytest.approx(0.0532, abs=1e-4)  # sqrt(13/60 x 47/60 / 60)
    assert r.se["degenerate_embedding"] == 0.0
    fpc = build_report(_cases(REFERENCE), POP, TriageOptions(k=50, mode="hybrid", fpc=True))
    assert fpc.reachable_se == pytest.approx(0.0642 * math.sqrt(92 / 151), abs=1e-4)


def test_json_has_exactly_the_documented_keys() -> None:
    data = build_report(_cases(REFERENCE), POP, TriageOptions(k=50, mode="hybrid")).to_json()
    assert list(data) == ["sample", "buckets", "shares", "se", "points", "part_shares", "part_points", "failing_whole",
                          "reachable_share", "reachable_points", "unreachable_points", "ceiling_points", "expected_band", "cases",
                          "exact", "intervals", "ranking_cues", "difference", "warnings", "probes_not_built"]
    assert set(data["cases"][0]) == {"id", "question", "bucket", "evidence", "history", "gold_text"}  # type: ignore[index]


def test_small_ceiling_band_and_unknown_population() -> None:
    r = build_report(_cases({"filler": 1, "ranking": 19}), POP, TriageOptions(k=50, mode="hybrid"))
    assert r.ceiling_points == 2 and r.expected_band == [0.6, 0.9]  # exact ceiling 1.9: 0.63 and 0.95, too small for a whole point
    r = build_report(_cases({"filler": 1, "ranking": 37}), POP, TriageOptions(k=50, mode="hybrid"))
    assert r.ceiling_points == 1 and r.expected_band == [0.3, 0.5]  # too small to round inwards
    unknown = build_report(_cases(REFERENCE), Population(failures=60), TriageOptions(k=50, mode="hybrid"))
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


@pytest.mark.parametrize(("counts", "acceptable"), [
    (REFERENCE, 0.62),
    # the issue's report: 2 of 40 reachable at 16.7334 failing points ("0 reachable points" next to "5%")
    ({"vocabulary": 2, "ranking": 20, "generation": 11, "absent": 7}, 1 - 0.167334),
    ({"suspect_label": 3, "vocabulary": 1, "compound": 1, "referent": 1, "ranking": 7, "extraction_noise": 4}, 0.8713),
    ({"filler": 1, "unlabelled_query_defect": 1, "referent": 1, "suspect_label": 1, "generation": 3}, 0.333),
])
def test_every_printed_sum_adds_up(counts: dict[str, int], acceptable: float) -> None:
    r = build_report(_cases(counts), Population(eval_total=1000, acceptable_rate=acceptable, failures=500), TriageOptions(k=50, mode="bm25"))
    assert r.failing_whole == round(100 * (1 - acceptable)) and r.part_points is not None
    pts = {b: v for b, v in r.points.items() if v is not None}
    # buckets add to their part, parts to the failing points, and so do reachable + unreachable
    assert sum(pts.values()) == sum(r.part_points.values()) == r.failing_whole
    assert sum(pts[b] for b in QUERY_BUCKETS) == r.part_points["reachable"] == r.reachable_points == r.ceiling_points
    assert r.reachable_points + r.unreachable_points == r.failing_whole  # type: ignore[operator]
    assert r.unreachable_points == r.part_points["suspect_label"] + r.part_points["rest"]
    assert pts["suspect_label"] == r.part_points["suspect_label"]
    # the same rule for shares
    assert sum(r.shares.values()) == sum(r.part_shares.values()) == 100
    assert sum(r.shares[b] for b in QUERY_BUCKETS) == r.part_shares["reachable"]
    # shares and points agree: a part with failures has points once its exact value reaches half a point
    for part, exact in r.part_points.items():
        n_part = sum(counts.get(b, 0) for b in {"reachable": QUERY_BUCKETS, "suspect_label": ("suspect_label",)}.get(part, ()))
        if part != "rest" and n_part / r.sample.n * r.failing_whole >= 0.5:
            assert exact >= 1, (part, r.part_points)


def test_the_issue_example_gives_its_five_percent_share_a_point() -> None:
    r = build_report(_cases({"vocabulary": 2, "ranking": 20, "generation": 11, "absent": 7}),
                     Population(eval_total=300, acceptable_rate=1 - 0.167334, failures=50), TriageOptions(k=50, mode="bm25"))
    assert r.part_shares["reachable"] == 5 and r.reachable_points == 1 and r.unreachable_points == 16
    assert r.failing_whole == 17 and r.sample.failing_points == pytest.approx(16.7334)


def test_suspect_labels_are_reported_apart_and_never_reachable() -> None:
    r = build_report(_cases({"suspect_label": 6, "vocabulary": 6, "ranking": 8}), POP, TriageOptions(k=50, mode="hybrid"))
    assert r.buckets["suspect_label"] == 6 and r.groups["suspect_label"] == 6 and r.groups["query_defect"] == 6
    assert r.reachable_share == 0.3  # 6 of 20: the denominator is every triaged failure, the numerator query defects only
    assert r.part_points == {"reachable": 12, "suspect_label": 11, "rest": 15}  # 11.4, 11.4, 15.2 by largest remainder
    assert r.ceiling_points == r.reachable_points == 12 and r.unreachable_points == 26
    assert r.part_shares == {"reachable": 30, "suspect_label": 30, "rest": 40}


def test_split_whole() -> None:
    assert split_whole(38, {"filler": 27, "ranking": 33})[0] == {"reachable": 17, "suspect_label": 0, "rest": 21}
    parts, buckets = split_whole(0, {})
    assert set(parts.values()) == {0} and set(buckets.values()) == {0}


def test_context_k_is_stated() -> None:
    r = build_report(_cases(REFERENCE), POP, TriageOptions(k=50, context_k=1, mode="hybrid"))
    assert r.to_json()["sample"]["context_k"] == 1  # type: ignore[index]
    assert r.sample.options == TriageOptions(k=50, context_k=1, mode="hybrid")  # what relabel rebuilds it with
