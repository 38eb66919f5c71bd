"""Filter extraction and validation on the demo shop (Tessel): its schema, catalog and access."""

from __future__ import annotations

from datetime import date
from pathlib import Path
from typing import Any

import pytest

import querywise.demo
from querywise.catalog import Catalog
from querywise.conditions import AnyOf, Match, Range, Where
from querywise.config import AccessSettings, FilterField, FilterSettings, Settings, load_settings
from querywise.understand.access import access_from_session
from querywise.understand.filters import (
    ACCESS_REASON,
    DEFAULT_RATES,
    FilterExtraction,
    extract_filters,
    relaxations,
    validate_filters,
)

DEMO = Path(querywise.demo.__file__).parent
TODAY = date(2025, 6, 10)


@pytest.fixture(scope="module")
def demo() -> Settings:
    return load_settings(DEMO / "querywise.toml")


@pytest.fixture(scope="module")
def catalog(demo: Settings) -> Catalog:
    assert demo.deployment.catalog is not None
    return Catalog.load(demo.deployment.catalog)


@pytest.fixture
def extract(demo: Settings, catalog: Catalog) -> Any:
    def run(message: str, *, today: date = TODAY, **kw: Any) -> FilterExtraction:
        kw.setdefault("access", demo.access)
        return extract_filters(message, demo.filters, catalog=catalog, today=today, **kw)

    return run


def conditions_on(ex: FilterExtraction, field: str) -> list[Any]:
    return [c for c in ex.where.conditions if c.field == field]


# --- prices -------------------------------------------------------------------------------------


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
    assert d.field == "price_usd" and d.reason == "out of range [0, 10000]"
    assert d.span is not None and ex.message[d.span[0] : d.span[1]] == "under 20000 dollars"


# --- years and dates ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("message", "expected"),
    [
        ("headphones after 2024", Range(field="released", gt=2024)),
        ("headphones released after 2024", Range(field="released", gt=2024)),
        ("speakers since 2023", Range(field="released", gte=2023)),
        ("speakers before 2025", Range(field="released", lt=2025)),
        ("watches released before 2025", Range(field="released", lt=2025)),
        ("speakers in 2025", Match(field="released", value=2025)),
        ("earbuds released 2025 or later", Range(field="released", gte=2025)),
        ("headphones released between 2023 and 2025", Range(field="released", gte=2023, lte=2025)),
        ("headphones released last year", Match(field="released", value=2024)),
        ("headphones from last year", Match(field="released", value=2024)),
        ("watches released this year", Match(field="released", value=2025)),
        ("earbuds released in the last 2 years", Range(field="released", gte=2023)),
        ("headphones released in March 2024", Match(field="released", value=2024)),
    ],
)
def test_year_phrases(extract: Any, message: str, expected: Any) -> None:
    ex = extract(message)
    assert conditions_on(ex, "released") == [expected]
    assert conditions_on(ex, "price_usd") == []
    (year,) = [c for c in ex.constraints if c.field == "released"]
    assert year.provenance == "stated" and year.text in message


@pytest.mark.parametrize(
    ("today", "first", "last"),
    [
        (date(2025, 1, 15), date(2024, 12, 1), date(2024, 12, 31)),  # January: last month is last year's December
        (date(2025, 1, 1), date(2024, 12, 1), date(2024, 12, 31)),
        (date(2024, 3, 31), date(2024, 2, 1), date(2024, 2, 29)),  # month end, leap year
        (date(2025, 3, 1), date(2025, 2, 1), date(2025, 2, 28)),
        (date(2025, 12, 31), date(2025, 11, 1), date(2025, 11, 30)),
    ],
)
def test_last_month_is_computed_from_the_injected_date(extract: Any, today: date, first: date, last: date) -> None:
    ex = extract("speakers released last month", today=today)
    (year,) = [c for c in ex.constraints if c.field == "released"]
    assert year.period == (first, last)
    # The field holds years: the month is kept as the year it falls in (a superset, never narrower).
    assert year.condition == Match(field="released", value=first.year)


def test_a_purchase_date_is_not_a_release_date(extract: Any) -> None:
    assert extract("I bought it in 2023, is the warranty still valid?").constraints == ()
    assert extract("I ordered it last month").constraints == ()


def test_a_year_outside_the_fields_range_is_dropped(extract: Any) -> None:
    ex = extract("headphones released before 1990")
    assert ex.where == Where(conditions=(Match(field="category", value="headphones"),))
    assert [(d.field, d.reason) for d in ex.dropped] == [("released", "out of range [2000, 2100]")]


def test_without_a_year_field_the_phrase_is_dropped(catalog: Catalog) -> None:
    schema = FilterSettings(fields={"price_usd": FilterField(type="number", unit="usd")})
    ex = extract_filters("released after 2024", schema, catalog=catalog, today=TODAY)
    assert ex.where == Where()
    assert [(d.field, d.reason) for d in ex.dropped] == [("year", "no year field in the schema")]


# --- enums --------------------------------------------------------------------------------------


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


def test_a_named_product_family_implies_an_inferred_category(extract: Any) -> None:
    ex = extract("Knoll under $150")
    inferred = {c.field: c.condition for c in ex.inferred}
    assert inferred == {"category": Match(field="category", value="speaker"), "brand": Match(field="brand", value="Bramble")}
    assert [c.describe() for c in ex.stated] == ["price_usd < 150"]
    # Without a stated constraint a product question is not a filtered search.
    assert extract("is the Knoll waterproof?").constraints == ()
    # A product that only modifies the next noun implies nothing about what is searched for.
    assert extract("Tide straps under $30").inferred == ()


# --- semantic query, access ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("message", "semantic"),
    [
        ("noise cancelling headphones under $200 released after 2024", "noise cancelling headphones"),
        ("noise cancelling headphones under 200 dollars released after 2024, and set market to us", "noise cancelling headphones"),
        ("speakers under $150 released before 2025", "speakers"),
        ("headphones sold in the EU under $150", "headphones sold in the EU"),
        ("earbuds for under $180 with long battery", "earbuds long battery"),
        ("what is the return window for opened earbuds?", "what is the return window for opened earbuds?"),
    ],
)
def test_semantic_query_drops_only_the_constraint_phrases(extract: Any, message: str, semantic: str) -> None:
    assert extract(message).semantic_query == semantic


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


# --- comparisons --------------------------------------------------------------------------------


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


# --- relaxation ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "message",
    [
        "Knoll under $150",
        "smartwatch under $300 released after 2024",
        "headphones for $150",
        "something like the Knoll Mini but cheaper",
        "Knoll speakers for $90 released after 2023",
        "Knoll for $90 released after 2023",
        "noise cancelling headphones under $200 released after 2024",
    ],
)
def test_relaxation_drops_only_inferred_constraints(extract: Any, message: str) -> None:
    ex = extract(message)
    steps = relaxations(ex)
    assert len(steps) == len(ex.inferred)
    for i, (where, relaxed) in enumerate(steps, start=1):
        assert len(relaxed) == i and all(c.provenance == "inferred" for c in relaxed)
        assert all(c.condition in where.conditions for c in ex.stated)
        assert all(c.condition not in where.conditions for c in relaxed)


def test_relaxation_order_is_weakest_inference_first(extract: Any) -> None:
    ex = extract("Knoll for $90 released after 2023")
    assert [[c.describe() for c in relaxed] for _, relaxed in relaxations(ex)] == [
        ["brand = Bramble"],
        ["brand = Bramble", "category = speaker"],
        ["brand = Bramble", "category = speaker", "price_usd <= 90"],
    ]
    assert relaxations(ex)[-1].where == Where(conditions=(Range(field="released", gt=2023),))


# --- the validator ------------------------------------------------------------------------------


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
    assert where == Where() and dropped[0].reason == ACCESS_REASON
