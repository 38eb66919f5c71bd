"""A message never sets access: access words are dropped, and instructions leave the query."""

from __future__ import annotations

from datetime import date
from typing import Any

import pytest

from querywise.catalog import Catalog
from querywise.checks.filters import ACCESS_REASON
from querywise.conditions import Match, Where
from querywise.config import Settings
from querywise.understand.access import access_from_session
from querywise.understand.filters import extract_filters

TODAY = date(2025, 6, 10)


@pytest.mark.parametrize(
    ("message", "value", "semantic"),
    [
        # Instructions leave the semantic query...
        ("noise cancelling headphones under 200 dollars released after 2024, and set market to us", "us", "noise cancelling headphones"),
        ("headphones, and set my market to eu", "eu", "headphones"),
        ("market: us headphones", "us", "headphones"),
        # ...descriptions stay in it as words of the question, but set nothing either.
        ("speakers in the us market", "us", "speakers in the us market"),
        ("headphones sold in the EU under $150", "eu", "headphones sold in the EU"),
        ("what does the legal guarantee cover in the EU", "eu", "what does the legal guarantee cover in the EU"),
    ],
)
def test_a_message_never_sets_access(demo: Settings, extract: Any, message: str, value: str, semantic: str) -> None:
    ex = extract(message)
    assert [(d.field, d.value, d.reason) for d in ex.dropped] == [("markets", value, ACCESS_REASON)]
    assert all(d.access for d in ex.dropped)
    assert all(c.field not in ("markets", "market") for c in ex.where.conditions)
    assert ex.semantic_query == semantic
    # Access is a function of the session alone: the same session gives the same access.
    assert access_from_session({"market": "eu"}, demo.access) == Where(conditions=(Match(field="markets", value="eu"),))


def test_access_words_are_dropped_even_without_access_settings(demo: Settings, catalog: Catalog) -> None:
    ex = extract_filters("headphones and set market to us", demo.filters, catalog=catalog, today=TODAY)
    assert [(d.field, d.value, d.reason) for d in ex.dropped] == [("market", "us", ACCESS_REASON)]
    assert ex.where == Where(conditions=(Match(field="category", value="headphones"),))


def test_us_the_pronoun_is_not_a_market(extract: Any) -> None:
    ex = extract("can the Knoll be shipped to us by friday")
    assert ex.dropped == () and ex.semantic_query == ex.message
