"""The filter validator on the demo shop (Tessel): its schema, catalog and access."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import querywise.demo
from querywise.catalog import Catalog
from querywise.checks.filters import ACCESS_REASON, validate_filters
from querywise.conditions import AnyOf, Match, NoneOf, Range, Where
from querywise.config import (
    AccessSettings,
    FilterField,
    FilterSettings,
    Settings,
    load_settings,
)

DEMO = Path(querywise.demo.__file__).parent


@pytest.fixture(scope="module")
def demo() -> Settings:
    return load_settings(DEMO / "querywise.toml")


@pytest.fixture(scope="module")
def catalog(demo: Settings) -> Catalog:
    assert demo.deployment.catalog is not None
    return Catalog.load(demo.deployment.catalog)


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        ({"colour": "red"}, "unknown field"),
        ({"price_usd": "cheap"}, "wrong type"),
        ({"price_usd": True}, "wrong type"),
        ({"released": 2024.5}, "wrong type"),
        ({"category": 3}, "wrong type"),
        ({"category": {"lt": 3}}, "wrong type"),
        ({"price_usd": {"lt": 20000}}, "out of range"),
        ({"released": 1999}, "out of range"),
        ({"price_usd": {"below": 200}}, "unknown range operator"),
        ({"price_usd": {"gt": 300, "lt": 100}}, "empty range"),
        ({"category": "toasters"}, "not in the catalog's values"),
        ({"brand": "Sony"}, "not in the catalog's values"),
        ({"colour_below": 3}, "cannot map flat key"),
        ({"markets": "us"}, ACCESS_REASON),
        ({"market": "us"}, ACCESS_REASON),
        ({"markets_from": "us"}, ACCESS_REASON),
    ],
)
def test_validator_drops_with_a_reason(demo: Settings, catalog: Catalog, raw: dict[str, Any], reason: str) -> None:
    where, dropped = validate_filters(raw, demo.filters, catalog=catalog, access=demo.access)
    assert where == Where()
    ((key, value),) = raw.items()
    assert [(d.field, d.value) for d in dropped] == [(key, value)]
    assert dropped[0].reason.startswith(reason)
    assert dropped[0].access is (reason == ACCESS_REASON)  # typed: callers never match the text


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ({"category": "Speakers"}, [Match(field="category", value="speaker")]),
        ({"category": ["headphones", "earbuds"]}, [AnyOf(field="category", values=("headphones", "earbuds"))]),
        ({"price_usd": {"lt": 200, "gte": 10}}, [Range(field="price_usd", lt=200, gte=10)]),
        ({"price_usd": "149"}, [Match(field="price_usd", value=149)]),
        ({"released": 2025}, [Match(field="released", value=2025)]),
        ({"price_below": 200, "released_after": 2024}, [Range(field="price_usd", lt=200), Range(field="released", gt=2024)]),
        ({"price_between": [100, 200]}, [Range(field="price_usd", gte=100, lte=200)]),
        ({"year_since": 2023}, [Range(field="released", gte=2023)]),
    ],
)
def test_validator_accepts_each_shape(demo: Settings, catalog: Catalog, raw: dict[str, Any], expected: list[Any]) -> None:
    where, dropped = validate_filters(raw, demo.filters, catalog=catalog, access=demo.access)
    assert list(where.conditions) == expected and dropped == []


def test_validator_keeps_the_valid_part_of_a_list(demo: Settings, catalog: Catalog) -> None:
    where, dropped = validate_filters({"category": ["headphones", "toasters"]}, demo.filters, catalog=catalog)
    assert where == Where(conditions=(Match(field="category", value="headphones"),))
    assert [(d.field, d.value) for d in dropped] == [("category", "toasters")]


def test_an_enum_without_values_or_catalog_accepts_nothing(demo: Settings) -> None:
    where, dropped = validate_filters({"category": "headphones"}, demo.filters, catalog=None)
    assert where == Where() and "no allowed values" in dropped[0].reason


def test_listed_enum_values_need_no_catalog() -> None:
    schema = FilterSettings(fields={"tier": FilterField(type="enum", values=["basic", "plus"])})
    assert validate_filters({"tier": "Plus"}, schema, catalog=None) == (Where(conditions=(Match(field="tier", value="plus"),)), [])


def test_ambiguous_flat_stem_is_dropped() -> None:
    schema = FilterSettings(fields={"price_usd": FilterField(type="number"), "price_eur": FilterField(type="number")})
    where, dropped = validate_filters({"price_below": 5}, schema, catalog=None)
    assert where == Where() and "several fields" in dropped[0].reason


def test_access_settings_make_their_own_fields_session_only(catalog: Catalog) -> None:
    schema = FilterSettings(fields={"tenant_id": FilterField(type="keyword")})
    access = AccessSettings(fields={"tenant": "tenant_id"})
    where, dropped = validate_filters({"tenant_id": "acme"}, schema, catalog=catalog, access=access)
    assert where == Where() and dropped[0].reason == ACCESS_REASON and dropped[0].access


def test_the_validator_takes_an_exclusion_and_checks_its_values(demo: Settings, catalog: Catalog) -> None:
    where, dropped = validate_filters({"brand": {"not": ["halden", "Nope"]}, "category_not": "speakers"}, demo.filters, catalog=catalog)
    assert where == Where(conditions=(NoneOf(field="brand", values=("Halden",)), NoneOf(field="category", values=("speaker",))))
    assert [d.value for d in dropped] == ["Nope"]
    where, dropped = validate_filters({"price_usd": {"not": {"lt": 3}}}, demo.filters, catalog=catalog)
    assert not where and "not a range" in dropped[0].reason
