"""Units: quantities converted to the unit a field is stored in (pint), or dropped with the reason."""

from __future__ import annotations

import datetime as dt

import pytest

from querywise.conditions import Range, describe
from querywise.config import FilterSettings
from querywise.understand.filters import DEFAULT_RATES, extract_filters
from querywise.understand.filters.units import convert, currency_of

SCHEMA = FilterSettings.model_validate({"fields": {
    "price_cents": {"type": "integer", "unit": "usd_cents", "aliases": ["price"]},
    "weight_g": {"type": "number", "unit": "g", "aliases": ["weight", "weighs"]},
    "length_mm": {"type": "number", "unit": "mm"},
    "battery_hours": {"type": "number", "unit": "hour", "aliases": ["battery"]},
    "warranty_months": {"type": "integer", "unit": "month", "aliases": ["warranty"]},
}})


def read(message: str) -> tuple[list[str], list[tuple[str, str]]]:
    ex = extract_filters(message, SCHEMA, catalog=None, today=dt.date(2026, 12, 1))
    return [describe(c.condition) for c in ex.constraints], [(d.field, d.reason) for d in ex.dropped]


@pytest.mark.parametrize(
    ("message", "expected"),
    [
        ("headphones under $200", "price_cents < 20000"),  # a currency's minor unit
        ("earbuds under 180 euros", "price_cents < 19440"),  # the rate table, then cents
        ("earbuds under 1.2 kg", "weight_g < 1200"),
        ("a speaker lighter than 500 grams", "weight_g < 500"),
        ("a strap shorter than 6 inches", "length_mm < 152.4"),
        ('a strap under 6"', "length_mm < 152.4"),
        ("a cable 2 m or less", "length_mm <= 2000"),
        ("headphones with a battery over 40 hours", "battery_hours > 40"),  # two time fields: the alias decides
        ("at least 2 years of warranty", "warranty_months >= 24"),
    ],
)
def test_a_quantity_is_converted_to_the_field_s_unit(message: str, expected: str) -> None:
    found, dropped = read(message)
    assert found == [expected] and dropped == []


def test_what_cannot_be_converted_is_dropped_with_the_reason() -> None:
    assert read("under 5 liters") == ([], [("measure", "no filter field measures [length] ** 3")])
    assert read("something under 200 yen") == ([], [("price_cents", "cannot convert jpy to usd_cents: no rate in the table")])
    assert read("over 3 hours")[1] == [("battery_hours", "battery_hours and warranty_months all measure [time]; name one")]


def test_a_quantity_with_no_measured_field_is_just_words() -> None:
    plain = FilterSettings.model_validate({"fields": {"price": {"type": "number", "unit": "usd"}}})
    ex = extract_filters("headphones with 40 hours of battery, over 30 hours", plain, catalog=None, today=dt.date(2026, 12, 1))
    assert ex.constraints == () and ex.dropped == ()


def test_conversions() -> None:
    assert convert(200, "usd", "usd_cents", DEFAULT_RATES) == (20000.0, "200 usd = 20000 usd_cents")
    assert convert(2, "kg", "mm", DEFAULT_RATES) == (None, "cannot convert kg to mm: [mass] is not [length]")
    assert convert(1, "kg", "stone_x", DEFAULT_RATES)[0] is None
    assert (currency_of("usd_cents", DEFAULT_RATES), currency_of("g", DEFAULT_RATES)) == ("usd", None)
    assert Range(field="price_cents", lt=20000) == extract_filters("under $200", SCHEMA, catalog=None, today=dt.date(2026, 12, 1)).where.conditions[0]
