"""Exclusions: "not from X", "without X", "except X", "other than X" become a must_not (NoneOf),
never the equality the bare value would give (the Kestrel incident of issue #36)."""

from __future__ import annotations

from typing import Any

import pytest

from querywise.catalog import Catalog
from querywise.conditions import Match, NoneOf, Where
from querywise.config import Settings
from querywise.understand.filters.missing import with_missing_policy


@pytest.mark.parametrize(
    ("message", "excluded"),
    [
        ("headphones that aren't from Halden", ("Halden",)),
        ("headphones not from Halden", ("Halden",)),
        ("speakers without Bramble", ("Bramble",)),
        ("watches except Corra", ("Corra",)),
        ("earbuds other than Halden or Bramble", ("Halden", "Bramble")),
        ("earbuds that aren’t made by Halden", ("Halden",)),
    ],
)
def test_an_exclusion_is_a_none_of_and_leaves_the_text(extract: Any, message: str, excluded: tuple[str, ...]) -> None:
    ex = extract(message)
    assert NoneOf(field="brand", values=excluded) in ex.where.conditions
    assert not any(isinstance(c, Match) and c.field == "brand" for c in ex.where.conditions)
    assert all(b not in ex.semantic_query for b in excluded)  # the excluded brand does not pull its own pages up
    (made,) = [c for c in ex.constraints if isinstance(c.condition, NoneOf)]
    assert made.provenance == "stated" and made.describe().startswith("brand not in")


def test_an_exclusion_the_wanted_value_implies_is_left_out(extract: Any) -> None:
    ex = extract("earbuds, not headphones")
    assert ex.where == Where(conditions=(Match(field="category", value="earbuds"),))
    assert ex.semantic_query == "earbuds"
    ex = extract("Halden products but not headphones")
    assert ex.where == Where(conditions=(Match(field="brand", value="Halden"), NoneOf(field="category", values=("headphones",))))


def test_without_a_word_the_schema_does_not_know_is_left_to_the_text(extract: Any) -> None:
    ex = extract("headphones without noise cancelling")
    assert ex.where == Where(conditions=(Match(field="category", value="headphones"),))
    assert "without noise cancelling" in ex.semantic_query


def test_an_exclusion_with_a_catalog_link_excludes_the_articles_about_those_products(demo: Settings, catalog: Catalog) -> None:
    """Help articles carry no brand: "not from Halden" also excludes the ones about Halden products."""
    where = with_missing_policy(Where(conditions=(NoneOf(field="brand", values=("Halden",)),)), demo.filters, catalog)
    brand, about = where.conditions
    assert brand == NoneOf(field="brand", values=("Halden",))
    assert isinstance(about, NoneOf) and about.field == "products" and "Halden Solace 7" in about.values
    assert not where.matches({"products": ["Halden Solace 7"]})
    assert where.matches({"products": ["Bramble Knoll"]}) and where.matches({"title": "Returns"})


@pytest.mark.parametrize("message", ["I don't want Halden, show me earbuds", "earbuds, no Halden please", "earbuds but I do not want anything from Halden"])
def test_a_refusal_is_an_exclusion_too(extract: Any, message: str) -> None:
    assert NoneOf(field="brand", values=("Halden",)) in extract(message).where.conditions


def test_a_question_that_is_no_search_excludes_nothing(extract: Any) -> None:
    ex = extract("can I use the Tide app without a watch?")
    assert not ex.where and "without a watch" in ex.semantic_query
