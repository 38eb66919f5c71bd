"""The one structured plan call: only what was asked for is used, and every answer passes the
rewrite guard and the filter validator before it is used."""

from __future__ import annotations

from typing import Any

import pytest

from querywise.catalog import Catalog, Entity
from querywise.conditions import Match, Range, Where
from querywise.config import AccessSettings, FilterField, FilterSettings, RouteSpec
from querywise.llm.provider import LLMError
from querywise.llm.scripted import ScriptedProvider
from querywise.llm.structured import conversation_key
from querywise.understand.llm_plan import PlanNeeds, plan_call

CATALOG = Catalog(
    [
        Entity("1", "Aero X2", fields={"category": "headphones", "brand": "Northwind"}),
        Entity("2", "Aero X2 Pro", fields={"category": "headphones", "brand": "Northwind"}),
        Entity("3", "Pulse Buds", fields={"category": "earbuds", "brand": "Northwind"}),
    ]
)
SCHEMA = FilterSettings(
    fields={
        "category": FilterField(type="enum", catalog_field="category"),
        "price_usd": FilterField(type="number", min=0, unit="usd", aliases=["price"]),
    }
)
ACCESS = AccessSettings(fields={"market": "markets"})
ROUTES = [RouteSpec(name="kb_search", search=True, description="help"), RouteSpec(name="account", description="orders")]


def scripted(task: str, key: str, output: dict[str, Any]) -> ScriptedProvider:
    return ScriptedProvider.from_records([{"task": task, "input": key, "output": output}])


def _plan(output: dict[str, Any], needs: PlanNeeds, message: str = "Does it cover water damage?", history: tuple[str, ...] = ("What's the warranty on the Aero X2?",)) -> Any:
    p = scripted("plan", conversation_key(message, history), output)
    return plan_call(p, message, history, needs=needs, routes=ROUTES, filter_settings=SCHEMA, catalog=CATALOG, access=ACCESS, timeout_s=1.0)


def test_plan_call_uses_only_what_was_asked_for() -> None:
    out = {"route": "account", "standalone": "Does the Aero X2 warranty cover water damage?", "filters": {"category": "headphones"},
           "assumption": None, "clarifying_question": None, "options": None, "semantic_query": None}  # fmt: skip
    only_rewrite = _plan(out, PlanNeeds(rewrite=True)).value
    assert only_rewrite.standalone == out["standalone"] and only_rewrite.route is None and not only_rewrite.filters
    everything = _plan(out, PlanNeeds(rewrite=True, route=True, filters=True)).value
    assert everything.route == "account" and everything.filters == Where(conditions=(Match(field="category", value="headphones"),))


@pytest.mark.parametrize(
    ("output", "reason"),
    [
        ({"standalone": "Does the Aero X2 Pro warranty cover water damage?"}, "guard_rejected"),
        ({"standalone": "Does the Aero X2 warranty cover water damage?", "route": "billing"}, "schema_violation"),
        ({"standalone": "Does the Aero X2 warranty cover water damage?", "why": "because"}, "schema_violation"),
        ({"standalone": 42}, "schema_violation"),
        ({"standalone": None, "assumption": "Assuming you mean the Pulse Buds"}, "guard_rejected"),
    ],
)
def test_plan_call_rejects_whole_answers_that_fail_a_check(output: dict[str, Any], reason: str) -> None:
    with pytest.raises(LLMError) as info:
        _plan(output, PlanNeeds(rewrite=True, route=True))
    assert info.value.reason == reason


def test_plan_call_rewrite_passes_the_guard_or_the_answer_is_rejected() -> None:
    ok = _plan({"standalone": "Does the Aero X2 warranty cover water damage?"}, PlanNeeds(rewrite=True)).value
    assert ok.standalone == "Does the Aero X2 warranty cover water damage?" and ok.ask is None
    with pytest.raises(LLMError, match="invented") as info:
        _plan({"standalone": "Does the Aero X2 Pro warranty cover water damage?"}, PlanNeeds(rewrite=True))
    assert info.value.reason == "guard_rejected"


def test_plan_call_asks_when_a_reference_has_two_readings() -> None:
    out = {"standalone": None, "clarifying_question": "The Aero X2 or the Pulse Buds?", "options": ["Aero X2", "Pulse Buds"]}
    r = _plan(out, PlanNeeds(rewrite=True), message="How long does it last?", history=("Compare the Aero X2 and the Pulse Buds.",)).value
    assert r.standalone is None and r.ask is not None and r.ask.options == ["Aero X2", "Pulse Buds"]


def test_plan_call_route_is_one_of_the_configured_routes() -> None:
    assert _plan({"route": "account"}, PlanNeeds(route=True), message="what's the capital of Peru", history=()).value.route == "account"
    with pytest.raises(LLMError) as info:
        _plan({"route": "geography"}, PlanNeeds(route=True), message="what's the capital of Peru", history=())
    assert info.value.reason == "schema_violation"


def test_plan_call_filters_pass_the_validator_and_never_set_access() -> None:
    m = "noise cancelling headphones under 200 dollars, and set market to us"
    out = {"semantic_query": "noise cancelling headphones", "filters": {"category": "headphones", "price_usd": {"lt": 200, "gt": None}, "markets": "us", "colour": "red"}}
    called = _plan(out, PlanNeeds(filters=True), message=m, history=())
    assert called.value.filters == Where(conditions=(Match(field="category", value="headphones"), Range(field="price_usd", lt=200)))
    assert sorted(d.field for d in called.dropped) == ["colour", "markets"]
    assert [d.access for d in sorted(called.dropped, key=lambda d: d.field)] == [False, True]  # counted as an access drop by type, not by text
    assert called.value.semantic_query == "noise cancelling headphones"
