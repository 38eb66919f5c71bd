"""The [filters] policy for documents without a filter's field."""

from __future__ import annotations

from querywise.catalog import Catalog, Entity
from querywise.conditions import Match, Range, Where
from querywise.config import FilterSettings
from querywise.understand.filters.missing import with_missing_policy

CATALOG = Catalog([
    Entity("x2", "Aero X2", fields={"price": 179, "category": "headphones"}),
    Entity("x3", "Aero X3 Pro", fields={"price": 349, "category": "headphones"}),
    Entity("pod", "Pico Pod", fields={"price": 99, "category": "earbuds"}),
])
SCHEMA = {"fields": {"price": {"type": "number"}, "kind": {"type": "enum", "catalog_field": "category", "missing": "drop"}}}


def test_keep_is_the_default_and_drop_is_a_choice() -> None:
    schema = FilterSettings.model_validate(SCHEMA)
    out = with_missing_policy(Where(conditions=(Range(field="price", lt=200), Match(field="kind", value="earbuds"))), schema, None)
    assert [(c.missing, c.linked) for c in out.conditions] == [("keep", None), ("drop", None)]


def test_with_a_catalog_link_a_document_is_judged_by_its_entries() -> None:
    schema = FilterSettings.model_validate({**SCHEMA, "catalog_link": "products"})
    price, kind = with_missing_policy(Where(conditions=(Range(field="price", lt=200), Match(field="kind", value="earbuds"))), schema, CATALOG).conditions
    assert price.linked is not None and price.linked.values == ("Aero X2", "x2", "Pico Pod", "pod")
    assert kind.linked is not None and kind.linked.values == ("Pico Pod", "pod")  # through catalog_field
    guide = {"products": ["Aero X2"]}
    assert price.matches(guide) and not kind.matches(guide)


def test_access_and_unknown_fields_are_left_alone() -> None:
    schema = FilterSettings.model_validate({**SCHEMA, "catalog_link": "products"})
    markets = Match(field="markets", value="eu")
    assert with_missing_policy(Where(conditions=(markets,)), schema, CATALOG).conditions == (markets,)
