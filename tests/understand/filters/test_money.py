"""Prices: comparison words, currencies and fixed rates, budgets, amounts out of range."""

from __future__ import annotations

from typing import Any

import pytest

from querywise.conditions import Range
from querywise.understand.filters import DEFAULT_RATES, FilterExtraction


def conditions_on(ex: FilterExtraction, field: str) -> list[Any]:
    return [c for c in ex.where.conditions if c.field == field]


@pytest.mark.parametrize(
    ("message", "expected"),
    [
        ("headphones under 200 dollars", Range(field="price_usd", lt=200)),
        ("headphones below $200", Range(field="price_usd", lt=200)),
        ("headphones less than 200 bucks", Range(field="price_usd", lt=200)),
        ("earbuds up to $150", Range(field="price_usd", lte=150)),
        ("earbuds at most $150", Range(field="price_usd", lte=150)),
        ("earbuds no more than 150 dollars", Range(field="price_usd", lte=150)),
        ("speakers over $100", Range(field="price_usd", gt=100)),
        ("speakers more than $100", Range(field="price_usd", gt=100)),
        ("speakers above 100 bucks", Range(field="price_usd", gt=100)),
        ("watches at least $200", Range(field="price_usd", gte=200)),
        ("watches from $200", Range(field="price_usd", gte=200)),
        ("earbuds between 100 and 200 dollars", Range(field="price_usd", gte=100, lte=200)),
        ("earbuds from $100 to $200", Range(field="price_usd", gte=100, lte=200)),
        ("earbuds $120 or less", Range(field="price_usd", lte=120)),
        ("a speaker under 150 bucks", Range(field="price_usd", lt=150)),
        ("headphones that cost less than $300", Range(field="price_usd", lt=300)),
        ("headphones, price under 300", Range(field="price_usd", lt=300)),
    ],
)
def test_price_phrases(extract: Any, message: str, expected: Range) -> None:
    ex = extract(message)
    assert conditions_on(ex, "price_usd") == [expected]
    (price,) = [c for c in ex.constraints if c.field == "price_usd"]
    assert price.provenance == "stated"
    start, end = price.spans[0]
    assert message[start:end] == price.text and any(ch.isdigit() for ch in price.text)


def test_euros_are_converted_to_the_fields_usd_with_the_fixed_rate(extract: Any) -> None:
    ex = extract("headphones under €180")
    assert DEFAULT_RATES["eur"] == 1.08
    assert conditions_on(ex, "price_usd") == [Range(field="price_usd", lt=194.4)]  # 180 x 1.08
    assert "180 eur = 194.4 usd" in ex.constraints[-1].reason
    assert conditions_on(extract("headphones under 180 euros"), "price_usd") == [Range(field="price_usd", lt=194.4)]
    assert conditions_on(extract("headphones under £100"), "price_usd") == [Range(field="price_usd", lt=127)]


def test_a_deployment_passes_its_own_rates(extract: Any) -> None:
    ex = extract("headphones under €100", rates={"usd": 1.0, "eur": 1.5})
    assert conditions_on(ex, "price_usd") == [Range(field="price_usd", lt=150)]


def test_a_currency_without_a_rate_is_dropped_not_guessed(extract: Any) -> None:
    ex = extract("headphones under 20000 yen")
    assert conditions_on(ex, "price_usd") == []
    assert [(d.field, d.reason) for d in ex.dropped] == [("price_usd", "cannot convert jpy to usd: no rate in the table")]


def test_a_number_without_currency_is_a_price_only_when_no_noun_follows(extract: Any) -> None:
    assert conditions_on(extract("headphones under 200"), "price_usd") == [Range(field="price_usd", lt=200)]
    assert "no currency given: read as usd" in extract("headphones under 200").constraints[-1].reason
    assert conditions_on(extract("speakers with battery over 30 hours"), "price_usd") == []
    assert conditions_on(extract("more than 2 speakers"), "price_usd") == []
    assert extract("is HC-3417 in stock").constraints == ()


def test_an_amount_without_a_comparison_word_is_an_inferred_budget(extract: Any) -> None:
    ex = extract("headphones for $150")
    (price,) = [c for c in ex.constraints if c.field == "price_usd"]
    assert price.condition == Range(field="price_usd", lte=150)
    assert (price.provenance, price.basis) == ("inferred", "operator")
    around = extract("headphones around $150")
    assert conditions_on(around, "price_usd") == [Range(field="price_usd", gte=135, lte=165)]


def test_out_of_range_amount_is_dropped_with_its_span(extract: Any) -> None:
    ex = extract("speakers under 20000 dollars")
    assert conditions_on(ex, "price_usd") == []
    (d,) = ex.dropped
    assert d.field == "price_usd" and d.reason == "out of range [0, 10000]" and not d.access
    assert d.span is not None and ex.message[d.span[0] : d.span[1]] == "under 20000 dollars"
