"""Filters and ambiguity against the reference rows: decide, ambiguity candidates, self-query."""

from __future__ import annotations

import json
import re
from datetime import date
from pathlib import Path
from typing import Any

import pytest

from querywise.catalog import Catalog, Entity
from querywise.checks.filters import ACCESS_REASON, validate_filters
from querywise.conditions import Match, NoneOf, Range, Where
from querywise.config import AccessSettings, FilterField, FilterSettings
from querywise.plan import Assume
from querywise.understand.access import access_from_session
from querywise.understand.ambiguity import decide, link_mentions
from querywise.understand.filters import extract_filters

TODAY = date(2025, 6, 1)  # the self-query row uses no relative dates; any fixed day gives the same answer
ACCESS = AccessSettings(fields={"market": "markets"})


@pytest.fixture(scope="module")
def catalog(reference: dict[str, Any]) -> Catalog:
    core = {"id", "name", "description"}
    return Catalog(
        Entity(str(r["id"]), r["name"], description=r.get("description", ""), fields={k: v for k, v in r.items() if k not in core})
        for r in reference["catalog"]
    )


@pytest.fixture(scope="module")
def schema() -> FilterSettings:
    return FilterSettings(
        fields={
            "category": FilterField(type="enum", catalog_field="category"),
            "brand": FilterField(type="enum", catalog_field="brand"),
            "price_usd": FilterField(type="number", min=0, unit="usd", aliases=["price"]),
            "released": FilterField(type="integer", min=1990, max=2100, aliases=["released", "year"]),
        }
    )


def test_decide_rows(reference: dict[str, Any]) -> None:
    table = reference["expected"]["decide"]
    costs = table["costs_seconds"]
    for row in table["rows"]:
        d = decide(row["p_top"], cost_wrong=row["cost_wrong"], cost_ask=costs["ask"], cost_cover=costs["cover"],
                   cover_possible=row["cover_possible"])  # fmt: skip
        assert d.choice == row["choice"], row
        assert d.costs == row["costs"], row


def test_ambiguity_candidates(reference: dict[str, Any], catalog: Catalog) -> None:
    row = reference["expected"]["ambiguity"]
    (m,) = link_mentions(f"what is the warranty on the {row['mention']}?", [], catalog)
    assert m.text == row["mention"] and m.partial
    assert sorted(r.name for r in m.readings) == sorted(row["candidates"])
    assert m.answers_differ
    assert sum(r.probability for r in m.readings) == pytest.approx(1.0)


def test_filter_enums_come_from_the_catalog(reference: dict[str, Any], catalog: Catalog) -> None:
    for field, values in reference["filter_enums"].items():
        assert sorted(catalog.values(field)) == sorted(values)


def test_self_query_extraction(reference: dict[str, Any], catalog: Catalog, schema: FilterSettings) -> None:
    row = reference["expected"]["self_query"]
    ex = extract_filters(row["user_query"], schema, catalog=catalog, today=TODAY, access=ACCESS)
    assert ex.semantic_query == row["extracted"]["semantic_query"]
    assert [[d.field, d.value] for d in ex.dropped] == row["dropped"]
    assert all(d.reason == ACCESS_REASON for d in ex.dropped)
    assert ex.where == Where(
        conditions=(
            Match(field="category", value="headphones"),
            Range(field="price_usd", lt=200),
            Range(field="released", gt=2024),
        )
    )
    assert all(c.provenance == "stated" for c in ex.constraints)
    # The same constraints proposed as the reference's flat dict pass the validator unchanged,
    # and its market is dropped the same way.
    where, dropped = validate_filters(row["extracted"]["filters"], schema, catalog=catalog, access=ACCESS)
    assert where == ex.where
    assert [[d.field, d.value] for d in dropped] == row["dropped"]
    # Access comes from the session only.
    assert access_from_session({"market": row["session_market"]}, ACCESS) == Where(
        conditions=(Match(field="markets", value=row["session_market"]),)
    )


def test_self_query_semantics(reference: dict[str, Any], catalog: Catalog, schema: FilterSettings) -> None:
    """Each 'phrase = op' pair of the row's semantics note, applied to a price or a year."""
    rules = reference["expected"]["self_query"]["semantics"].split(";")[0]
    pairs = [tuple(part.strip().split(" = ")) for part in rules.split(",")]
    assert pairs
    for phrase, meaning in pairs:
        m = re.fullmatch(r"(\w+)(?: (\d{4}))?", meaning)
        assert m is not None, meaning
        op, year = m.group(1), m.group(2)
        if year:  # a year phrase: "after 2024 = gt 2024"
            ex = extract_filters(f"headphones released {phrase}", schema, catalog=catalog, today=TODAY)
            expected = Range(field="released", **{op: int(year)})
        else:  # a price word: "under = lt"
            ex = extract_filters(f"headphones {phrase} 200 dollars", schema, catalog=catalog, today=TODAY)
            expected = Range(field="price_usd", **{op: 200})
        assert expected in ex.where.conditions, (phrase, ex.where)


def test_issue_36_incidents_on_the_reference_catalog(catalog: Catalog, schema: FilterSettings) -> None:
    """Negation, a bare number on a cents field, a number about a field that is no price, and
    "like the Kestrel ones but cheaper" on the reference catalog built as a deployment."""
    ex = extract_filters("headphones that aren't from Kestrel", schema, catalog=catalog, today=TODAY, access=ACCESS)
    assert ex.where == Where(conditions=(Match(field="category", value="headphones"), NoneOf(field="brand", values=("Kestrel",))))
    cents = FilterSettings(fields={**schema.fields, "price_usd": FilterField(type="number", min=0, unit="usd_cents", aliases=["price"])})
    ex = extract_filters("earbuds under 150", cents, catalog=catalog, today=TODAY, access=ACCESS)
    assert Range(field="price_usd", lt=15000) in ex.where.conditions  # $150, not 150 cents
    ex = extract_filters("like the Kestrel ones but cheaper", schema, catalog=catalog, today=TODAY, access=ACCESS)
    assert Range(field="price_usd", lt=199) in ex.where.conditions  # below the cheapest Kestrel (the K5)
    assert ex.similar is not None and ex.similar.relation == "cheaper"


def test_assuming_the_pro_retrieves_the_pro(reference: dict[str, Any], reference_index: Any, embedder: Any, tmp_path: Path) -> None:
    """"Assuming you mean the Aero X2 Pro" searches the Pro: the top hit is its 24-month warranty,
    not the base model's 12 months; covering returns each reading's own hits."""
    from querywise.config import Settings
    from querywise.execute import execute
    from querywise.understand.pipeline import Understander

    (tmp_path / "catalog.jsonl").write_text("\n".join(json.dumps({**r, "id": str(r["id"])}) for r in reference["catalog"]), encoding="utf-8")
    settings = Settings.model_validate({"deployment": {"catalog": str(tmp_path / "catalog.jsonl")}, "understanding": {"moves": ["ambiguity"]}})
    u = Understander(settings, embedder=embedder, lexicon=reference_index.lexicon)
    plan = u.plan("what is the warranty on the X2?", history=["I bought the Aero X2 Pro last week"])
    assert plan.action == Assume(text="Assuming you mean the Aero X2 Pro.")
    result = execute(plan, reference_index, k=3)
    assert result.hits[0].id == "aero-pro-warranty"
    covered = execute(u.plan("what is the warranty on the X2?"), reference_index, k=3)
    assert covered.plan.action.type == "cover"
    assert covered.by_reading["Aero X2"][0].id == "aero-warranty" and covered.by_reading["Aero X2 Pro"][0].id == "aero-pro-warranty"
