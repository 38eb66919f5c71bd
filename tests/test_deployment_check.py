"""The deployment's check against its index: each setting that would silently empty results (or
leave a route unreachable) is a named error or warning. Pure functions, no index needed."""

from __future__ import annotations

import pytest

from querywise.catalog import Catalog, Entity
from querywise.config import (
    AccessSettings,
    FilterField,
    FilterSettings,
    IdentifierRule,
    RouteSpec,
    RoutingSettings,
    Settings,
)
from querywise.deployment_check import (
    DeploymentError,
    FieldPresence,
    check_deployment,
    judged_id_problems,
    payload_field_counts,
)

# What the test shop's six chunks carry (tests/conftest.py SHOP).
SHOP = FieldPresence(n_chunks=6, counts={"category": 6, "markets": 6, "price": 6})


def test_field_counts_skip_nulls_and_empty_lists() -> None:
    counts = payload_field_counts([{"a": 1, "b": [], "c": None}, {"a": "x", "b": ["eu"], "d": {}}, {"e": 0, "f": False}])
    assert counts == {"a": 2, "b": 1, "e": 1, "f": 1}  # 0 and False are values; null, [] and {} match nothing


def test_presence_reads_key_paths_by_their_root_and_always_has_id_text_title() -> None:
    p = FieldPresence(n_chunks=4, counts={"shop": 2})
    assert p.count("shop.tags[]") == 2 and not p.carries("shops.tags") and p.count("title") == 4 and p.carries("id")


def test_a_required_access_field_no_chunk_carries_is_an_error_naming_it_and_what_chunks_carry() -> None:
    settings = Settings(access=AccessSettings(fields={"tenant": "tenant"}))
    check = check_deployment(settings, fields=SHOP)
    assert [p.severity for p in check.problems] == ["error"]
    message = check.errors[0].message
    assert "access field 'tenant'" in message and "no chunk of the index carries it" in message
    assert "chunks carry: category, markets, price" in message and check.errors[0].subject == "access.fields.tenant"
    with pytest.raises(DeploymentError, match="access field 'tenant'"):
        check.raise_errors()


def test_an_optional_access_field_no_chunk_carries_is_a_warning() -> None:
    settings = Settings(access=AccessSettings(fields={"team": "team"}, optional=["team"]))
    check = check_deployment(settings, fields=SHOP)
    assert check.errors == [] and len(check.warnings) == 1
    assert "a session that gives 'team' finds nothing" in check.warnings[0].message
    check.raise_errors()  # warnings never stop a deployment


def test_chunks_without_the_access_field_are_said_to_be_invisible() -> None:
    settings = Settings(access=AccessSettings(fields={"market": "markets"}))
    partial = FieldPresence(n_chunks=6, counts={"markets": 4})
    (w,) = check_deployment(settings, fields=partial).warnings
    assert "2 of 6 chunks do not carry it" in w.message and "no session ever finds them" in w.message
    assert check_deployment(settings, fields=SHOP).problems == ()  # every chunk carries it: nothing to say


def test_a_filter_field_no_chunk_carries_is_a_warning_naming_it() -> None:
    settings = Settings(filters=FilterSettings(fields={"price": FilterField(type="number"), "colour": FilterField(type="keyword")}))
    (w,) = check_deployment(settings, fields=SHOP).problems
    assert w.severity == "warning" and w.subject == "filters.fields.colour"
    assert "filter field 'colour': no chunk of the index carries it" in w.message and "empty every result" in w.message


def test_without_an_index_only_settings_catalog_and_routes_are_checked() -> None:
    settings = Settings(access=AccessSettings(fields={"tenant": "tenant"}), filters=FilterSettings(fields={"colour": FilterField(type="keyword")}))
    assert check_deployment(settings, fields=None).problems == ()


def test_an_enum_whose_catalog_key_no_entry_carries_has_no_values() -> None:
    settings = Settings(filters=FilterSettings(fields={"category": FilterField(type="enum", catalog_field="kind")}))
    catalog = Catalog([Entity("1", "Vela X3", fields={"category": "headphones"})])
    (w,) = check_deployment(settings, catalog=catalog).problems
    assert "enum filter field 'category' has no allowed values" in w.message and "'kind'" in w.message and "catalog fields: category" in w.message
    assert "no [deployment] catalog" in check_deployment(settings, catalog=None).problems[0].message
    fixed = Settings(filters=FilterSettings(fields={"category": FilterField(type="enum", catalog_field="category")}))
    assert check_deployment(fixed, catalog=catalog).problems == ()
    listed = Settings(filters=FilterSettings(fields={"category": FilterField(type="enum", values=["headphones"])}))
    assert check_deployment(listed, catalog=None).problems == ()


def test_a_route_nothing_can_reach_is_a_warning() -> None:
    routing = RoutingSettings(
        routes=[RouteSpec(name="kb"), RouteSpec(name="refunds"), RouteSpec(name="lookup"), RouteSpec(name="oos")],
        rules=[IdentifierRule(pattern=r"\bQR-\d+\b", route="lookup")],
        out_of_scope_route="oos",
    )
    (w,) = check_deployment(Settings(routing=routing), routes_with_examples={"kb"}).problems
    assert w.subject == "routing.routes.refunds" and "route 'refunds' has no examples" in w.message
    # A route reached by a rule or as the out-of-scope route needs no examples.
    assert "lookup" not in w.message and "'oos'" not in w.message


def test_routes_without_any_example_or_default_cannot_route() -> None:
    routing = RoutingSettings(routes=[RouteSpec(name="kb"), RouteSpec(name="account")])
    (e,) = check_deployment(Settings(routing=routing)).problems
    assert e.severity == "error" and "no route has examples" in e.message and "default_route" in e.message
    with_default = RoutingSettings(routes=[RouteSpec(name="kb"), RouteSpec(name="account")], default_route="kb")
    (w,) = check_deployment(Settings(routing=with_default)).problems
    assert w.severity == "warning" and "'account'" in w.message


def test_errors_come_first() -> None:
    settings = Settings(access=AccessSettings(fields={"tenant": "tenant"}), filters=FilterSettings(fields={"colour": FilterField(type="keyword")}))
    assert [p.severity for p in check_deployment(settings, fields=SHOP).problems] == ["error", "warning"]


def test_judged_ids_none_of_which_is_in_the_index_are_an_error_with_examples() -> None:
    judged = [f"doc-{i}" for i in range(412)]
    (e,) = judged_id_problems(judged, {"x3-warranty", "returns"}, index="my-index")
    assert e.severity == "error" and e.message.startswith("none of the 412 judged ids is in the index my-index")
    assert "'doc-0', 'doc-1', 'doc-2', ..." in e.message and "wrong index?" in e.message


def test_some_unknown_judged_ids_are_a_warning_and_known_ones_nothing() -> None:
    (w,) = judged_id_problems(["returns", "gone", "returns"], {"returns", "x3-warranty"}, index="ix")
    assert w.severity == "warning" and w.message.startswith("1 of 2 judged ids are not in the index ix (e.g. 'gone')")
    assert judged_id_problems(["returns", "x3-warranty"], {"returns", "x3-warranty"}, index="ix") == []
    assert judged_id_problems([], set(), index="ix") == []
