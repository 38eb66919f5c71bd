"""Constraints inferred from a named product family."""

from __future__ import annotations

from typing import Any

from querywise.conditions import Match


def test_a_named_product_family_implies_an_inferred_category(extract: Any) -> None:
    ex = extract("Knoll under $150")
    inferred = {c.field: c.condition for c in ex.inferred}
    assert inferred == {"category": Match(field="category", value="speaker"), "brand": Match(field="brand", value="Bramble")}
    assert [c.describe() for c in ex.stated] == ["price_usd < 150"]
    # Without a stated constraint a product question is not a filtered search.
    assert extract("is the Knoll waterproof?").constraints == ()
    # A product that only modifies the next noun implies nothing about what is searched for.
    assert extract("Tide straps under $30").inferred == ()
