import pytest

from querywise.conditions import AnyOf, Match, Range, Where, WhereSyntaxError, parse_where


def test_every_operator_parses() -> None:
    w = parse_where(["category=headphones", "price<200", "price<=199", "year>2024", "year>=2025", "markets=eu,us"])
    assert w.conditions == (
        Match(field="category", value="headphones"),
        Range(field="price", lt=200),
        Range(field="price", lte=199),
        Range(field="year", gt=2024),
        Range(field="year", gte=2025),
        AnyOf(field="markets", values=("eu", "us")),
    )


def test_integers_and_booleans_are_typed() -> None:
    w = parse_where(["released=2025", "refurbished=true"])
    assert w.conditions[0].value == 2025 and w.conditions[1].value is True  # type: ignore[union-attr]


@pytest.mark.parametrize("expr", ["price", "price<cheap", "=x", "a b=c"])
def test_bad_expressions_name_the_problem(expr: str) -> None:
    with pytest.raises(WhereSyntaxError, match="price|parse"):
        parse_where([expr])


def test_range_needs_a_bound() -> None:
    with pytest.raises(ValueError, match="no bound"):
        Range(field="price")


def test_where_and_combines_and_empty_is_falsy() -> None:
    assert not Where()
    both = parse_where(["a=1"]) & parse_where(["b<2"])
    assert [c.field for c in both.conditions] == ["a", "b"]
