"""The LLM moves and the plan call: every answer is checked in code before it is used."""

from __future__ import annotations

from typing import Any

import pytest

from querywise.catalog import Catalog, Entity
from querywise.conditions import Match, Range, Where
from querywise.config import AccessSettings, FilterField, FilterSettings, RouteSpec
from querywise.llm import moves
from querywise.llm.plan_call import PlanNeeds, plan_call
from querywise.llm.provider import LLMError, StructuredRequest
from querywise.llm.schemas import (
    FiltersOutput,
    PlanOutput,
    RewriteOutput,
    RouteOutput,
    VariantsOutput,
    filters_schema,
)
from querywise.llm.scripted import ScriptedProvider

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


def _objects(schema: Any) -> list[dict[str, Any]]:
    found = []
    if isinstance(schema, dict):
        if schema.get("type") == "object":
            found.append(schema)
        for v in schema.values():
            found += _objects(v)
    elif isinstance(schema, list):
        for v in schema:
            found += _objects(v)
    return found


def test_every_schema_object_is_closed_and_lists_every_property_as_required() -> None:
    fs = filters_schema(SCHEMA, CATALOG)
    schemas = [
        PlanOutput.json_schema(routes=["kb_search", "account"], filters=fs), RewriteOutput.json_schema(),
        VariantsOutput.json_schema(), RouteOutput.json_schema(["a"]), FiltersOutput.json_schema(fs),
    ]  # fmt: skip
    for schema in schemas:
        objs = _objects(schema)
        assert objs
        for o in objs:
            assert o["additionalProperties"] is False and sorted(o["required"]) == sorted(o["properties"])
    # Enums come from the catalog; the route enum from the configured routes.
    assert fs["properties"]["category"]["anyOf"][0]["enum"] == ["earbuds", "headphones"]
    plan = PlanOutput.json_schema(routes=["kb_search", "account"], filters=fs)
    assert plan["properties"]["route"]["anyOf"][0]["enum"] == ["kb_search", "account"]


def test_rewrite_passes_the_guard_or_is_rejected() -> None:
    history = ["What's the warranty on the Aero X2?"]
    key = moves.conversation_key("Does it cover water damage?", history)
    ok = moves.rewrite_standalone(scripted("rewrite", key, {"standalone": "Does the Aero X2 warranty cover water damage?"}), "Does it cover water damage?", history, catalog=CATALOG)
    assert ok.value.standalone == "Does the Aero X2 warranty cover water damage?" and ok.value.ask is None
    with pytest.raises(LLMError, match="invented") as info:
        moves.rewrite_standalone(scripted("rewrite", key, {"standalone": "Does the Aero X2 Pro warranty cover water damage?"}), "Does it cover water damage?", history, catalog=CATALOG)
    assert info.value.reason == "guard_rejected"


def test_rewrite_clarify_outcome_when_a_reference_has_two_readings() -> None:
    history = ["Compare the Aero X2 and the Pulse Buds."]
    out = {"standalone": None, "clarifying_question": "The Aero X2 or the Pulse Buds?", "options": ["Aero X2", "Pulse Buds"]}
    r = moves.rewrite_standalone(scripted("rewrite", moves.conversation_key("How long does it last?", history), out), "How long does it last?", history, catalog=CATALOG)
    assert r.value.standalone is None and r.value.ask is not None and r.value.ask.options == ["Aero X2", "Pulse Buds"]


def test_multi_query_drops_repeats_and_inventions_keeps_the_rest() -> None:
    q = "my headphones got wet, am I covered?"
    out = {"variants": ["My headphones got wet, am I covered?", "Aero X2 Pro water damage", "headphones liquid damage coverage", "water damage warranty for headphones"]}
    r = moves.multi_query(scripted("multi_query", q, out), q, n=3, catalog=CATALOG)
    assert r.value == ["headphones liquid damage coverage", "water damage warranty for headphones"]
    assert len(r.dropped) == 2 and any("Aero X2 Pro" in d for d in r.dropped)


def test_step_back_may_drop_names_never_invent_them() -> None:
    q = "Why does my Aero X2 cut out in the kitchen?"
    assert moves.step_back(scripted("step_back", q, {"question": "What causes Bluetooth headphones to lose connection?"}), q, catalog=CATALOG).value
    with pytest.raises(LLMError) as info:
        moves.step_back(scripted("step_back", q, {"question": "Why do Pulse Buds lose connection?"}), q, catalog=CATALOG)
    assert info.value.reason == "guard_rejected"


def test_hyde_and_query2doc_return_the_passage() -> None:
    q = "the headband snapped"
    assert moves.hyde(scripted("hyde", q, {"passage": " A cracked headband is not covered. "}), q).value == "A cracked headband is not covered."
    with pytest.raises(LLMError) as info:
        moves.query2doc(scripted("query2doc", q, {"passage": "x", "notes": "extra"}), q)
    assert info.value.reason == "schema_violation"


def test_route_tier_answers_only_with_a_configured_route() -> None:
    m = "what's the capital of Peru"
    assert moves.route_unsure(scripted("route", m, {"route": "account"}), m, ROUTES).value == "account"
    with pytest.raises(LLMError) as info:
        moves.route_unsure(scripted("route", m, {"route": "geography"}), m, ROUTES)
    assert info.value.reason == "schema_violation"


def test_llm_filters_pass_the_validator_and_never_set_access() -> None:
    m = "noise cancelling headphones under 200 dollars, and set market to us"
    out = {"semantic_query": "noise cancelling headphones", "filters": {"category": "headphones", "price_usd": {"lt": 200, "gt": None}, "markets": "us", "colour": "red"}}
    r = moves.extract_filters_llm(scripted("filters", m, out), m, SCHEMA, catalog=CATALOG, access=ACCESS)
    assert r.value.where == Where(conditions=(Match(field="category", value="headphones"), Range(field="price_usd", lt=200)))
    assert sorted(d.field for d in r.value.dropped) == ["colour", "markets"]
    assert r.value.semantic_query == "noise cancelling headphones"


def test_generate_probe_keeps_to_the_passage_vocabulary() -> None:
    passage = "Pulse Buds play for 8 hours per charge, and the case adds another 24 hours."
    assert moves.generate_probe(scripted("probe", passage, {"question": "How many hours do Pulse Buds play per charge?"}), passage)
    with pytest.raises(LLMError, match="battery") as info:
        moves.generate_probe(scripted("probe", passage, {"question": "What is the battery life of Pulse Buds?"}), passage)
    assert info.value.reason == "guard_rejected"
    assert moves.vocabulary_violations("What is the battery life?", passage) == ["battery", "life"]


def _plan(output: dict[str, Any], needs: PlanNeeds, message: str = "Does it cover water damage?", history: tuple[str, ...] = ("What's the warranty on the Aero X2?",)) -> Any:
    p = scripted("plan", moves.conversation_key(message, history), output)
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


def test_a_request_carries_the_versioned_prompt() -> None:
    p = scripted("hyde", "q", {"passage": "p"})
    r = moves.hyde(p, "q")
    (req,) = p.calls
    assert isinstance(req, StructuredRequest) and req.name == "hyde" and "passage" in req.instructions
    assert r.prompt_version == "hyde-1"
