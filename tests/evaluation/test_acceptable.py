"""The --acceptable-if rule: conditions on one metric each, all required."""

from __future__ import annotations

import pytest

from querywise.evaluation.acceptable import (
    DEFAULT_ACCEPTABLE,
    AcceptableRuleError,
    parse_condition,
    parse_rule,
)


def test_a_bare_metric_means_above_zero() -> None:
    c = parse_condition("hit@5")
    assert (c.metric.label, c.op, c.value, c.text) == ("hit_rate@5", ">", 0.0, "hit@5")
    assert c.holds({"hit_rate@5": 1.0})
    assert not c.holds({"hit_rate@5": 0.0})
    assert not c.holds({"hit_rate@5": None})  # no score: not acceptable
    assert not c.holds({"ndcg@10": 1.0})  # the metric was not scored: not acceptable


@pytest.mark.parametrize(
    ("text", "label", "op", "value", "passing", "failing"),
    [
        ("ndcg@10>=0.5", "ndcg@10", ">=", 0.5, 0.5, 0.4999),
        ("nDCG@10  >=  .5", "ndcg@10", ">=", 0.5, 0.7, 0.3),
        ("mrr@10 > 0.25", "mrr@10", ">", 0.25, 0.5, 0.25),
        ("mrr<=0.5", "mrr", "<=", 0.5, 0.5, 0.51),
        ("recall@100 < 1", "recall@100", "<", 1.0, 0.5, 1.0),
        ("precision@5 == 0.2", "precision@5", "==", 0.2, 0.2, 0.4),
        ("hits@1 >= 1e0", "hit_rate@1", ">=", 1.0, 1.0, 0.0),
    ],
)
def test_metric_op_number(text: str, label: str, op: str, value: float, passing: float, failing: float) -> None:
    c = parse_condition(text)
    assert (c.metric.label, c.op, c.value) == (label, op, value)
    assert c.holds({label: passing})
    assert not c.holds({label: failing})
    assert c.text == " ".join(text.split())  # quoted in reports as written, spaces collapsed


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("", "cannot read the condition ''"),
        ("ndcg@10>=", "cannot read the condition 'ndcg@10>='"),
        ("ndcg@10=0.5", "OP one of >=, >, <=, <, =="),
        ("ndcg@10 != 0.5", "cannot read"),
        ("ndcg@10 >= half", "cannot read"),
        ("hit@5 and ndcg@10>=0.5", "cannot read"),
        (">= 0.5", "cannot read"),
        ("map@10", "unknown metric 'map@10'"),
        ("ndcg >= 0.5", "'ndcg' needs a cut-off"),
        ("ndcg@10>=1.5", "between 0 and 1"),
        ("recall@5 > -0.1", "between 0 and 1"),
    ],
)
def test_malformed_conditions_are_clear_errors(text: str, says: str) -> None:
    with pytest.raises(AcceptableRuleError) as exc:
        parse_condition(text)
    assert says in str(exc.value)


def test_several_conditions_are_all_required() -> None:
    rule = parse_rule(["hit@5", "ndcg@10 >= 0.5"])
    assert [m.label for m in rule.metrics] == ["hit_rate@5", "ndcg@10"]
    assert rule.label == "hit@5 and ndcg@10 >= 0.5"
    assert rule.acceptable({"hit_rate@5": 1.0, "ndcg@10": 0.63})
    assert not rule.acceptable({"hit_rate@5": 1.0, "ndcg@10": 0.43})  # the second fails
    assert not rule.acceptable({"hit_rate@5": 0.0, "ndcg@10": 0.9})  # the first fails


def test_the_same_condition_twice_counts_once_and_none_is_the_default() -> None:
    assert parse_rule(["hit@5", "hit_rate@5", "hit@5 > 0"]).label == "hit@5"
    assert parse_rule(["mrr@10>=0.5", "mrr@10 >= .5"]).label == "mrr@10>=0.5"
    default = parse_rule([])
    assert DEFAULT_ACCEPTABLE == ("hit@5",) and default.label == "hit@5"
    assert [m.label for m in default.metrics] == ["hit_rate@5"]


@pytest.mark.parametrize(
    ("texts", "shown"),
    [
        (["hit@5"], 5),
        (["hit@1 >= 1"], 1),
        (["hits@3 == 1"], 3),
        (["hit@10 > 0.5"], 10),
        (["hit@5 == 0"], None),  # "not in the top 5" is no cut-off of what is shown
        (["hit@5 < 1"], None),
        (["ndcg@10 >= 0.5"], None),
        (["hit@5", "ndcg@10 >= 0.5"], None),
    ],
)
def test_a_rule_that_is_a_hit_at_k_names_how_many_results_are_shown(texts: list[str], shown: int | None) -> None:
    assert parse_rule(texts).shown == shown
