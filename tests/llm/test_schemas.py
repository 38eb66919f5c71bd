"""The provider schemas: every object closed, every property required (strict mode)."""

from __future__ import annotations

from typing import Any

from querywise.catalog import Catalog, Entity
from querywise.config import FilterField, FilterSettings
from querywise.llm.schemas import PassageOutput, PlanOutput, QuestionOutput, VariantsOutput, filters_schema

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
        PlanOutput.json_schema(routes=["kb_search", "account"], filters=fs), VariantsOutput.json_schema(),
        PassageOutput.json_schema(), QuestionOutput.json_schema(),
    ]
    for schema in schemas:
        objs = _objects(schema)
        assert objs
        for o in objs:
            assert o["additionalProperties"] is False and sorted(o["required"]) == sorted(o["properties"])
    # Enums come from the catalog; the route enum from the configured routes.
    assert fs["properties"]["category"]["anyOf"][0]["enum"] == ["earbuds", "headphones"]
    plan = PlanOutput.json_schema(routes=["kb_search", "account"], filters=fs)
    assert plan["properties"]["route"]["anyOf"][0]["enum"] == ["kb_search", "account"]
