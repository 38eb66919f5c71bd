"""Metric values computed by hand (ranks from 1; nDCG with linear gains)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from querywise.evaluation.metrics import (
    MetricError,
    parse_metric,
    parse_metrics,
    score,
    score_many,
)

RANKED = ["x", "a", "y", "b", "z"]
REL = {"a": 1, "b": 1}


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("recall@2", 0.5),
        ("recall@4", 1.0),
        ("precision@4", 0.5),
        ("precision@10", 0.2),  # divided by k, not by the list length (trec_eval, ranx)
        ("mrr", 0.5),
        ("mrr@1", 0.0),
        ("hit_rate@1", 0.0),
        ("hit_rate@2", 1.0),
        ("ndcg@10", (1 / math.log2(3) + 1 / math.log2(5)) / (1 + 1 / math.log2(3))),
    ],
)
def test_hand_computed(name: str, expected: float) -> None:
    assert score(parse_metric(name), RANKED, REL) == pytest.approx(expected)


def test_graded_ndcg_uses_the_grades() -> None:
    # ideal: grade 2 then grade 1; got: grade 1 then grade 2
    got = score(parse_metric("ndcg@2"), ["b", "a"], {"a": 2, "b": 1})
    assert got == pytest.approx((1 + 2 / math.log2(3)) / (2 + 1 / math.log2(3)))


def test_an_id_repeated_in_a_ranking_counts_once() -> None:
    assert score(parse_metric("recall@3"), ["a", "a", "a"], REL) == 0.5
    assert score(parse_metric("precision@2"), ["a", "a", "b"], REL) == 1.0


def test_no_relevant_id_means_no_score() -> None:
    assert score(parse_metric("ndcg@10"), ["a"], {}) is None
    assert score(parse_metric("recall@10"), ["a"], {"a": 0}) is None
    arr = score_many([parse_metric("recall@1")], [["a"], ["a"]], [{"a": 1}, {}])
    assert arr[0, 0] == 1.0 and np.isnan(arr[1, 0])


def test_names_are_parsed_in_one_place() -> None:
    assert [m.label for m in parse_metrics(["nDCG@10,Recall@100", "hits@5", "ndcg@10"])] == ["ndcg@10", "recall@100", "hit_rate@5"]
    for bad in ("ndcg", "recall@0", "map@10", "ndcg@ten"):
        with pytest.raises(MetricError):
            parse_metric(bad)
