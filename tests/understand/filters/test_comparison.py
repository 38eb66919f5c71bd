"""Comparisons: a similarity cue and a relative constraint, never a filter on the name."""

from __future__ import annotations

from typing import Any

from querywise.conditions import Match, Range, Where
from querywise.understand.filters import FilterExtraction


def conditions_on(ex: FilterExtraction, field: str) -> list[Any]:
    return [c for c in ex.where.conditions if c.field == field]


def test_like_a_product_but_cheaper_is_a_cue_and_a_relative_price_not_a_brand(extract: Any) -> None:
    ex = extract("headphones like the Knoll Mini but cheaper")
    assert ex.similar is not None
    assert (ex.similar.reference, ex.similar.entities, ex.similar.relation) == ("Knoll Mini", ("Bramble Knoll Mini",), "cheaper")
    assert ex.where == Where(conditions=(Match(field="category", value="headphones"), Range(field="price_usd", lt=59)))
    price = ex.similar.constraint
    assert price is not None and (price.provenance, price.basis) == ("stated", "comparison")
    assert ex.semantic_query == "headphones"


def test_a_brand_named_as_a_comparison_is_not_a_brand_filter(extract: Any) -> None:
    ex = extract("something like the Halden ones but cheaper")
    assert conditions_on(ex, "brand") == []
    assert ex.similar is not None and ex.similar.relation == "cheaper" and ex.similar.constraint is None
    assert "several price_usd values" in ex.similar.note  # not identifiable: no invented price


def test_cheaper_than_a_shared_alias_has_no_price(extract: Any) -> None:
    ex = extract("speakers cheaper than the Knoll")
    assert ex.similar is not None and set(ex.similar.entities) == {"Bramble Knoll", "Bramble Knoll Max"}
    assert ex.where == Where(conditions=(Match(field="category", value="speaker"),))


def test_newer_than_a_product_uses_its_year(extract: Any) -> None:
    ex = extract("watches newer than the Tide 4")
    assert conditions_on(ex, "released") == [Range(field="released", gt=2024)]


def test_a_comparison_implies_the_category_as_an_inferred_constraint(extract: Any) -> None:
    ex = extract("something like the Knoll Mini but cheaper")
    assert [(c.describe(), c.provenance) for c in ex.constraints] == [
        ("price_usd < 59", "stated"),
        ("category = speaker", "inferred"),
    ]


def test_i_would_like_is_not_a_comparison(extract: Any) -> None:
    assert extract("I'd like the Knoll Max in black").similar is None
