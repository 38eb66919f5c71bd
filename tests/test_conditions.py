from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from querywise.conditions import (
    AnyOf,
    Linked,
    Match,
    Range,
    Where,
    WhereSyntaxError,
    describe,
    parse_where,
    values_at,
)


def test_every_operator_parses() -> None:
    w = parse_where(["category=headphones", "price<200", "price<=199", "year>2024", "year>=2025", "markets=eu,us"])
    assert w.conditions == (
        Match(field="category", value="headphones"),
        Range(field="price", lt=200),
        Range(field="price", lte=199),
        Range(field="year", gt=2024),
        Range(field="year", gte=2025),
        AnyOf(field="markets", values=("eu", "us")),
    )


def test_integers_and_booleans_are_typed() -> None:
    w = parse_where(["released=2025", "refurbished=true"])
    assert w.conditions[0].value == 2025 and w.conditions[1].value is True  # type: ignore[union-attr]


@pytest.mark.parametrize("expr", ["price", "price<cheap", "=x", "a b=c"])
def test_bad_expressions_name_the_problem(expr: str) -> None:
    with pytest.raises(WhereSyntaxError, match=r"price|parse"):
        parse_where([expr])


def test_range_needs_a_bound() -> None:
    with pytest.raises(ValueError, match="no bound"):
        Range(field="price")


def test_where_and_combines_and_empty_is_falsy() -> None:
    assert not Where()
    both = parse_where(["a=1"]) & parse_where(["b<2"])
    assert [c.field for c in both.conditions] == ["a", "b"]


# --- Where.matches: what a condition means on one payload ----------------------------------

SHOP_ITEM = {"category": "headphones", "price": 179, "rating": 4.5, "markets": ["eu", "us"], "refurbished": False}


def _where(*exprs: str) -> Where:
    return parse_where(list(exprs))


def test_match_compares_typed_values() -> None:
    assert _where("category=headphones").matches(SHOP_ITEM)
    assert not _where("category=Headphones").matches(SHOP_ITEM)  # keywords are exact, case included
    assert _where("price=179").matches(SHOP_ITEM)
    assert not Match(field="price", value="179").matches(SHOP_ITEM)  # the string "179" is not the number
    assert not Match(field="price", value=179).matches({"price": 179.0})  # an integer match needs an integer
    assert _where("refurbished=false").matches(SHOP_ITEM)
    assert not Match(field="refurbished", value=0).matches(SHOP_ITEM)  # 0 is not False
    assert not Match(field="n", value=True).matches({"n": 1})  # nor True 1


def test_match_on_a_list_field_means_contains() -> None:
    assert _where("markets=eu").matches(SHOP_ITEM)
    assert _where("markets=us").matches(SHOP_ITEM)
    assert not _where("markets=uk").matches(SHOP_ITEM)
    assert not _where("markets=eu").matches({"markets": []})
    assert not Match(field="xs", value=1).matches({"xs": [[1, 2], 3]})  # one level: [1, 2] is not 1
    assert Match(field="xs", value=3).matches({"xs": [[1, 2], 3]})


def test_any_of_needs_one_shared_value() -> None:
    assert _where("category=earbuds,headphones").matches(SHOP_ITEM)
    assert not _where("category=earbuds,speakers").matches(SHOP_ITEM)
    assert _where("markets=uk,us").matches(SHOP_ITEM)  # list field: shares "us"
    assert not _where("markets=uk,ch").matches(SHOP_ITEM)
    assert AnyOf(field="price", values=(99, 179)).matches(SHOP_ITEM)
    assert not AnyOf(field="price", values=("179",)).matches(SHOP_ITEM)


@pytest.mark.parametrize(
    ("expr", "price", "expected"),
    [
        ("price<200", 179, True), ("price<179", 179, False), ("price<=179", 179, True), ("price<=178", 179, False),
        ("price>178", 179, True), ("price>179", 179, False), ("price>=179", 179, True), ("price>=180", 179, False),
        ("price<200", 199.99, True), ("price>=200", 200.0, True), ("price>-1", 0, True),
    ],
)  # fmt: skip
def test_range_each_bound(expr: str, price: float, expected: bool) -> None:
    assert _where(expr).matches({"price": price}) is expected


def test_range_with_two_bounds_and_what_is_not_a_number() -> None:
    band = Range(field="price", gte=100, lt=200)
    assert band.matches({"price": 100}) and band.matches({"price": 199.5})
    assert not band.matches({"price": 200}) and not band.matches({"price": 99})
    assert not Range(field="price", gte=0).matches({"price": "150"})  # a numeric string is not a number
    assert not Range(field="flag", gte=1).matches({"flag": True})  # nor is a bool
    assert not Range(field="price", gte=0).matches({"price": None})
    # a list field: one element must lie within every bound (not one element per bound)
    assert Range(field="sizes", gt=5, lt=20).matches({"sizes": [10, 300]})
    assert not Range(field="sizes", gt=100, lt=200).matches({"sizes": [10, 300]})


def test_a_missing_field_meets_no_condition() -> None:
    for cond in (Match(field="colour", value="red"), AnyOf(field="colour", values=("red", "blue")), Range(field="weight", lt=300)):
        assert not cond.matches(SHOP_ITEM)
        assert not cond.matches({cond.field: None})
        assert not Where(conditions=(cond,)).matches(SHOP_ITEM)


def test_empty_where_matches_everything() -> None:
    assert Where().matches(SHOP_ITEM) and Where().matches({})


def test_where_is_an_and() -> None:
    assert _where("markets=eu", "price<200", "category=headphones").matches(SHOP_ITEM)
    assert not _where("markets=eu", "price<100").matches(SHOP_ITEM)
    assert not _where("markets=uk", "price<200").matches(SHOP_ITEM)


def test_where_matches_is_an_independent_access_check() -> None:
    """(Moved from the evaluation's former `satisfies`, which the access probe used.)"""
    where = parse_where(["markets=eu", "price<200"])
    assert where.matches({"markets": ["eu", "us"], "price": 179})
    assert not where.matches({"markets": ["us"], "price": 179})
    assert not where.matches({"markets": ["eu"]})  # a missing field does not meet a range


def test_fields_are_key_paths() -> None:
    item = {"shop": {"city": "Berlin", "tags": ["new", "sale"]}, "sizes": [{"eu": 42}, {"eu": 43}], "a.b": "flat"}
    assert values_at(item, "shop.city") == ["Berlin"]
    assert Match(field="shop.tags", value="sale").matches(item)  # a list at the end of the path: its elements
    assert Match(field="sizes[].eu", value=43).matches(item)  # [] descends into every element
    assert Match(field="sizes[1].eu", value=43).matches(item) and not Match(field="sizes[0].eu", value=43).matches(item)
    assert not Match(field="sizes.eu", value=42).matches(item)  # an array is entered only with []
    assert not Match(field="a.b", value="flat").matches(item)  # a dot is a path, not part of a key
    assert values_at(item, "shop.missing.deeper") == [] and values_at(item, "sizes[5].eu") == []


# Payloads and conditions that `Where.matches` and the embedded engine must agree on.
_PAYLOADS: list[dict[str, Any]] = [
    SHOP_ITEM,
    {"category": "Headphones", "price": 179.0, "markets": "eu", "rating": 3},
    {"category": None, "price": "150", "markets": [], "sizes": [10, 300]},
    {"category": ["earbuds", "headphones"], "price": [150, "x"], "shop": {"tags": ["sale"]}},
    {"shop": [{"tags": ["sale"]}], "sizes": [{"eu": 42}], "price": True},
    {"price": 200, "rating": 5.0, "markets": ["us"], "mixed": [1, "1"]},
    {"mixed": 1.0, "sizes": [[150]]},
    {},
]
_CONDITIONS: list[Match | AnyOf | Range] = [
    Match(field="category", value="headphones"), Match(field="category", value="Headphones"),
    Match(field="price", value=179), Match(field="price", value=150), Match(field="price", value="150"),
    Match(field="markets", value="eu"), Match(field="mixed", value=1), Match(field="mixed", value="1"),
    Match(field="shop.tags", value="sale"), Match(field="shop[].tags", value="sale"), Match(field="sizes[].eu", value=42),
    AnyOf(field="category", values=("earbuds", "headphones")), AnyOf(field="price", values=(179, 200)),
    AnyOf(field="markets", values=("us", "uk")),
    Range(field="price", lt=200), Range(field="price", lte=200), Range(field="price", gt=179), Range(field="price", gte=179),
    Range(field="rating", gte=4, lt=5), Range(field="sizes", gt=100, lt=200), Range(field="sizes", gt=5, lt=20),
    Range(field="mixed", gte=1), Range(field="price", gte=0),
]  # fmt: skip
# Not in the list: bool matches. qdrant-edge-py hands `Match(value=True)` to the engine as the
# integer 1 (so the embedded engine finds `flag: 1`, not `flag: true`); `matches` keeps bools bools.


def test_matches_agrees_with_the_embedded_engine(tmp_path: Path) -> None:
    from querywise.index.engine import EdgeEngine, EnginePoint, EngineQuery

    engine = EdgeEngine.create(tmp_path / "shard", dim=2, hnsw_m=16, hnsw_ef_construct=100)
    try:
        engine.upsert([EnginePoint(i, [1.0, 0.5], ([], []), p) for i, p in enumerate(_PAYLOADS)])
        engine.finish()
        for cond in [*_CONDITIONS, None]:
            where = Where(conditions=(cond,) if cond else ())
            query = EngineQuery(mode="dense", limit=100, dense=[1.0, 0.5], where=where, exact=True)
            found = sorted(h.id for h in engine.query(query))
            assert found == [i for i, p in enumerate(_PAYLOADS) if where.matches(p)], cond
    finally:
        engine.close()


# A mixed corpus: product pages carry a price, help articles only the products they are about.
_MIXED = [
    {"price": 179}, {"price": 349}, {"products": ["Aero X2"]}, {"products": ["Aero X3 Pro"]},
    {"products": []}, {}, {"price": None, "products": ["Aero X2", "Aero X3 Pro"]},
]
_POLICIES = [
    Range(field="price", lt=200, missing="keep"),
    Range(field="price", lt=200, linked=Linked(field="products", values=("Aero X2",))),
    Range(field="price", lt=200, missing="keep", linked=Linked(field="products", values=("Aero X2",))),
    Range(field="price", lt=100, missing="keep", linked=Linked(field="products", values=())),  # no product meets it
    Match(field="price", value=179, missing="keep"),
    AnyOf(field="price", values=(179, 349), linked=Linked(field="products", values=("Aero X3 Pro",))),
]


def test_what_a_document_without_the_field_gets() -> None:
    keep, linked, both, none_meet = (Where(conditions=(c,)) for c in _POLICIES[:4])
    assert [keep.matches(p) for p in _MIXED] == [True, False, True, True, True, True, True]
    assert [linked.matches(p) for p in _MIXED] == [True, False, True, False, False, False, True]
    assert [both.matches(p) for p in _MIXED] == [True, False, True, False, True, True, True]
    assert [none_meet.matches(p) for p in _MIXED] == [False, False, False, False, True, True, False]


def test_a_plain_condition_dumps_as_it_always_has() -> None:
    assert Range(field="price", lt=200).model_dump() == {"kind": "range", "field": "price", "gt": None, "gte": None, "lt": 200.0, "lte": None}
    assert Range(field="price", lt=200, missing="keep").model_dump()["missing"] == "keep"
    assert describe(_POLICIES[0]) == "price < 200 (or no price)"


def test_both_engines_run_the_missing_policy_inside_the_engine(tmp_path: Path) -> None:
    from qdrant_client import models

    from querywise.index.engine import EdgeEngine, EnginePoint, EngineQuery
    from querywise.index.server import connect, qdrant_filter

    engine = EdgeEngine.create(tmp_path / "shard", dim=2, hnsw_m=16, hnsw_ef_construct=100)
    client = connect(":memory:")
    client.create_collection("mixed", vectors_config=models.VectorParams(size=2, distance=models.Distance.COSINE))
    client.upsert("mixed", [models.PointStruct(id=i, vector=[1.0, 0.5], payload=p) for i, p in enumerate(_MIXED)])
    try:
        engine.upsert([EnginePoint(i, [1.0, 0.5], ([], []), p) for i, p in enumerate(_MIXED)])
        engine.finish()
        for cond in _POLICIES:
            where = Where(conditions=(cond,))
            expected = [i for i, p in enumerate(_MIXED) if where.matches(p)]
            edge = sorted(h.id for h in engine.query(EngineQuery(mode="dense", limit=100, dense=[1.0, 0.5], where=where, exact=True)))
            server = sorted(int(p.id) for p in client.scroll("mixed", scroll_filter=qdrant_filter(where), limit=100)[0])
            assert edge == expected == server, cond
    finally:
        engine.close()


@pytest.mark.parametrize("condition", [
    {"kind": "match", "field": "price", "value": 10**30},  # past int64: the engine would fail mid-search
    {"kind": "any", "field": "price", "values": [1, -(2**63) - 1]},
    {"kind": "range", "field": "price", "gt": float("nan")},
    {"kind": "range", "field": "price", "lt": float("inf")},
])
def test_a_value_no_engine_can_hold_is_a_validation_error(condition: dict[str, object]) -> None:
    with pytest.raises(ValidationError):
        Where.model_validate({"conditions": [condition]})
    assert Where.model_validate({"conditions": [{"kind": "match", "field": "price", "value": 2**63 - 1}]})
