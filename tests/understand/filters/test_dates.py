"""Years and dates: comparison words, relative dates from the injected day, purchase dates."""

from __future__ import annotations

from datetime import date
from typing import Any

import pytest

from querywise.catalog import Catalog
from querywise.conditions import Match, Range, Where
from querywise.config import FilterField, FilterSettings
from querywise.understand.filters import FilterExtraction, extract_filters

TODAY = date(2025, 6, 10)


def conditions_on(ex: FilterExtraction, field: str) -> list[Any]:
    return [c for c in ex.where.conditions if c.field == field]


@pytest.mark.parametrize(
    ("message", "expected"),
    [
        ("headphones after 2024", Range(field="released", gt=2024)),
        ("headphones released after 2024", Range(field="released", gt=2024)),
        ("speakers since 2023", Range(field="released", gte=2023)),
        ("speakers before 2025", Range(field="released", lt=2025)),
        ("watches released before 2025", Range(field="released", lt=2025)),
        ("speakers in 2025", Match(field="released", value=2025)),
        ("earbuds released 2025 or later", Range(field="released", gte=2025)),
        ("headphones released between 2023 and 2025", Range(field="released", gte=2023, lte=2025)),
        ("headphones released last year", Match(field="released", value=2024)),
        ("headphones from last year", Match(field="released", value=2024)),
        ("watches released this year", Match(field="released", value=2025)),
        ("earbuds released in the last 2 years", Range(field="released", gte=2023)),
        ("headphones released in March 2024", Match(field="released", value=2024)),
    ],
)
def test_year_phrases(extract: Any, message: str, expected: Any) -> None:
    ex = extract(message)
    assert conditions_on(ex, "released") == [expected]
    assert conditions_on(ex, "price_usd") == []
    (year,) = [c for c in ex.constraints if c.field == "released"]
    assert year.provenance == "stated" and year.text in message


@pytest.mark.parametrize(
    ("today", "first", "last"),
    [
        (date(2025, 1, 15), date(2024, 12, 1), date(2024, 12, 31)),  # January: last month is last year's December
        (date(2025, 1, 1), date(2024, 12, 1), date(2024, 12, 31)),
        (date(2024, 3, 31), date(2024, 2, 1), date(2024, 2, 29)),  # month end, leap year
        (date(2025, 3, 1), date(2025, 2, 1), date(2025, 2, 28)),
        (date(2025, 12, 31), date(2025, 11, 1), date(2025, 11, 30)),
    ],
)
def test_last_month_is_computed_from_the_injected_date(extract: Any, today: date, first: date, last: date) -> None:
    ex = extract("speakers released last month", today=today)
    (year,) = [c for c in ex.constraints if c.field == "released"]
    assert year.period == (first, last)
    # The field holds years: the month is kept as the year it falls in (a superset, never narrower).
    assert year.condition == Match(field="released", value=first.year)


def test_a_purchase_date_is_not_a_release_date(extract: Any) -> None:
    assert extract("I bought it in 2023, is the warranty still valid?").constraints == ()
    assert extract("I ordered it last month").constraints == ()


def test_a_year_outside_the_fields_range_is_dropped(extract: Any) -> None:
    ex = extract("headphones released before 1990")
    assert ex.where == Where(conditions=(Match(field="category", value="headphones"),))
    assert [(d.field, d.reason) for d in ex.dropped] == [("released", "out of range [2000, 2100]")]


def test_without_a_year_field_the_phrase_is_dropped(catalog: Catalog) -> None:
    schema = FilterSettings(fields={"price_usd": FilterField(type="number", unit="usd")})
    ex = extract_filters("released after 2024", schema, catalog=catalog, today=TODAY)
    assert ex.where == Where()
    assert [(d.field, d.reason) for d in ex.dropped] == [("year", "no year field in the schema")]
