"""Numbers go to the field whose unit fits, never to the price by default (issue #36): a shop that
stores prices in cents and has a battery field."""

from __future__ import annotations

from datetime import date

import pytest

from querywise.catalog import Catalog, Entity
from querywise.conditions import Match, Range
from querywise.config import FilterField, FilterSettings
from querywise.understand.filters import FilterExtraction, extract_filters

TODAY = date(2025, 6, 10)

CATALOG = Catalog(
    [
        Entity("k7", "Kestrel K7", fields={"category": "headphones", "brand": "Kestrel", "price_cents": 32900, "battery_hours": 30, "weight_g": 254}),
        Entity("k5", "Kestrel K5", fields={"category": "headphones", "brand": "Kestrel", "price_cents": 19900, "battery_hours": 40, "weight_g": 250}),
        Entity("x2", "Aero X2", fields={"category": "headphones", "brand": "Northwind", "price_cents": 17900, "battery_hours": 30, "weight_g": 262}),
        Entity("pb", "Pulse Buds", fields={"category": "earbuds", "brand": "Northwind", "price_cents": 9900, "battery_hours": 6, "weight_g": 48}),
    ]
)


def schema(*, battery: bool = True, weight: bool = True) -> FilterSettings:
    fields = {
        "category": FilterField(type="enum"),
        "brand": FilterField(type="enum"),
        "price_cents": FilterField(type="number", min=0, unit="usd_cents", aliases=["price"]),
        "released": FilterField(type="integer", min=2000, max=2100),
    }
    if battery:
        fields["battery_hours"] = FilterField(type="number", min=0, unit="hour", aliases=["battery", "battery life"])
    if weight:
        fields["weight_g"] = FilterField(type="number", min=0, unit="gram")
    return FilterSettings(fields=fields)


def extract(message: str, **kw: bool) -> FilterExtraction:
    return extract_filters(message, schema(**kw), catalog=CATALOG, today=TODAY)


def test_a_bare_price_is_never_read_in_cents() -> None:
    """The seed's cents incident: "earbuds under 150" must not filter price < 150 cents."""
    ex = extract("earbuds under 150", battery=False, weight=False)
    assert Range(field="price_cents", lt=15000) in ex.where.conditions
    assert "read as usd" in " ".join(c.reason for c in ex.constraints)
    assert Range(field="price_cents", lt=12000) in extract("earbuds under $120").where.conditions


def test_a_bare_number_that_fits_two_fields_stays_in_the_query_with_a_reason() -> None:
    ex = extract("earbuds under 150")
    assert ex.where.conditions == (Match(field="category", value="earbuds"),)
    assert "under 150" in ex.semantic_query
    (why,) = [d for d in ex.dropped if d.field == "number"]
    assert "price_cents and battery_hours" in why.reason


def test_a_number_goes_to_the_field_the_message_names() -> None:
    assert extract("battery life over 40").where.conditions == (Range(field="battery_hours", gt=40),)
    assert extract("earbuds with a price under 150").where.conditions[-1] == Range(field="price_cents", lt=15000)


def test_a_number_about_a_field_that_is_no_filter_is_not_a_price() -> None:
    """The catalog has a battery field the schema does not filter on: "over 40" is not a price."""
    ex = extract("battery life over 40", battery=False)
    assert not ex.where
    assert "battery_hours" in ex.dropped[0].reason


@pytest.mark.parametrize(
    ("message", "expected"),
    [
        ("headphones with over 35 hours of battery", Range(field="battery_hours", gt=35)),
        ("headphones under 255 grams", Range(field="weight_g", lt=255)),
        ("headphones under 0.3 kg", Range(field="weight_g", lt=300)),
    ],
)
def test_a_unit_picks_the_field_of_its_dimension(message: str, expected: Range) -> None:
    assert expected in extract(message).where.conditions
    assert not any(c.field == "price_cents" for c in extract(message).where.conditions)


def test_lighter_than_a_product_is_a_range_from_its_own_weight_and_a_cue() -> None:
    ex = extract("headphones lighter than the Kestrel K7")
    assert Range(field="weight_g", lt=254) in ex.where.conditions
    assert ex.similar is not None and ex.similar.entities == ("Kestrel K7",) and ex.similar.relation == "lighter"


def test_like_a_brand_of_one_kind_but_cheaper_keeps_cheaper() -> None:
    """"like the Kestrel ones but cheaper": Kestrel makes headphones only; cheaper than all of them."""
    for message in ("like the Kestrel ones but cheaper", "headphones like the Kestrel ones but cheaper"):
        ex = extract(message)
        assert Range(field="price_cents", lt=19900) in ex.where.conditions, message
        assert ex.similar is not None and ex.similar.relation == "cheaper"
        assert not any(c.field == "brand" and isinstance(c, Match) for c in ex.where.conditions)


def test_a_bare_number_goes_to_the_one_field_that_tells_the_kind_apart() -> None:
    """"headphones under 200": every pair of headphones lasts less than 200 hours and weighs more
    than 200 g, so only the price tells them apart: $200 (20000 cents)."""
    ex = extract("headphones under 200")
    assert Range(field="price_cents", lt=20000) in ex.where.conditions
    assert "the only numeric field it fits" in " ".join(c.reason for c in ex.constraints)
