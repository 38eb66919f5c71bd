"""Enum values in the catalog's wording, compounds, and filters only in a product search."""

from __future__ import annotations

from typing import Any

import pytest

from querywise.conditions import AnyOf, Match
from querywise.understand.filters import FilterExtraction


def conditions_on(ex: FilterExtraction, field: str) -> list[Any]:
    return [c for c in ex.where.conditions if c.field == field]


@pytest.mark.parametrize(
    ("message", "category"),
    [
        ("speakers under $100", "speaker"),
        ("a speaker under $100", "speaker"),
        ("headphones under $100", "headphones"),
        ("a headphone under $100", "headphones"),
        ("watches under $300", "watch"),
        ("Earbuds under $300", "earbuds"),
        ("accessories under $30", "accessory"),
    ],
)
def test_enum_values_in_the_catalogs_wording(extract: Any, message: str, category: str) -> None:
    ex = extract(message)
    assert conditions_on(ex, "category") == [Match(field="category", value=category)]
    assert ex.constraints[0].provenance == "stated"


def test_several_values_of_one_field_are_any_of(extract: Any) -> None:
    ex = extract("show me Halden headphones or earbuds")
    assert conditions_on(ex, "category") == [AnyOf(field="category", values=("headphones", "earbuds"))]
    assert conditions_on(ex, "brand") == [Match(field="brand", value="Halden")]


@pytest.mark.parametrize(
    ("message", "searching"),
    [
        ("noise cancelling headphones with long battery", True),
        ("show me wireless headphones", True),
        ("recommend some earbuds for running", True),
        ("Can I return earbuds after opening them?", False),
        ("my earbuds keep cutting out whenever I'm in the kitchen", False),
        ("Does Steadfast Protection cover a stolen watch?", False),
    ],
)
def test_enum_values_are_filters_only_in_a_product_search(extract: Any, message: str, searching: bool) -> None:
    ex = extract(message)
    assert bool(ex.constraints) is searching
    assert bool(ex.mentioned) is not searching
    assert all(c.field == "category" for c in ex.constraints + ex.mentioned)


def test_enum_words_that_are_verbs_or_part_of_a_product_name_are_not_filters(extract: Any) -> None:
    for message in ["can I watch films on the flight with these?", "I plan to go running", "we want to watch a film"]:
        ex = extract(message)
        assert ex.constraints == () and ex.mentioned == (), message
    halden = extract("How long is the warranty on the Halden Solace 7?")
    assert halden.constraints == () and halden.mentioned == ()


def test_a_compound_word_gives_an_inferred_category(extract: Any) -> None:
    ex = extract("smartwatch under $300 released after 2024")
    (category,) = [c for c in ex.constraints if c.field == "category"]
    assert category.condition == Match(field="category", value="watch")
    assert (category.provenance, category.basis) == ("inferred", "compound")
    assert ex.semantic_query == "smartwatch"
