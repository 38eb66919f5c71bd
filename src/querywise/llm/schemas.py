"""JSON schemas sent to the providers, and the pydantic models their answers are read into.

Every object has `additionalProperties: false` and lists every property as required (what
OpenAI strict mode and Anthropic structured outputs both accept); optional values are nullable.
The models read answers strictly (`extra="forbid"`), because a provider may ignore the schema:
an extra field or a wrong type is a schema violation, never silently accepted.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict

from querywise.catalog import Catalog
from querywise.config import FilterSettings

__all__ = [
    "PassageOutput",
    "PlanOutput",
    "ProbeOutput",
    "QuestionOutput",
    "RerankOutput",
    "VariantsOutput",
    "filters_schema",
    "nullable",
    "strict_object",
]


def nullable(schema: Mapping[str, Any]) -> dict[str, Any]:
    return {"anyOf": [dict(schema), {"type": "null"}]}


def strict_object(properties: Mapping[str, Any]) -> dict[str, Any]:
    return {"type": "object", "properties": dict(properties), "required": list(properties), "additionalProperties": False}


_STR = {"type": "string"}
_STRS = {"type": "array", "items": {"type": "string"}}


def filters_schema(schema: FilterSettings, catalog: Catalog | None) -> dict[str, Any]:
    """One nullable property per filter field: enums list their values (from the catalog when
    `catalog_field` says so), numbers are `{gt, gte, lt, lte}` ranges."""
    props: dict[str, Any] = {}
    for name, spec in schema.fields.items():
        if spec.type == "enum":
            values = list(spec.values or [])
            if not values and catalog is not None and spec.catalog_field:
                values = sorted(str(v) for v in catalog.values(spec.catalog_field))
            props[name] = nullable({"type": "string", "enum": values} if values else _STR)
        elif spec.type in ("number", "integer"):
            num = {"type": spec.type}
            props[name] = nullable(strict_object({op: nullable(num) for op in ("gt", "gte", "lt", "lte")}))
        elif spec.type == "list":
            props[name] = nullable(_STRS)
        else:
            props[name] = nullable(_STR)
    return strict_object(props)


class _Out(BaseModel):
    model_config = ConfigDict(extra="forbid")


class PlanOutput(_Out):
    """The one call for the whole plan."""

    route: str | None = None
    standalone: str | None = None
    clarifying_question: str | None = None
    options: list[str] | None = None
    assumption: str | None = None
    semantic_query: str | None = None
    filters: dict[str, Any] | None = None

    @staticmethod
    def json_schema(*, routes: Sequence[str], filters: dict[str, Any] | None) -> dict[str, Any]:
        props: dict[str, Any] = {
            "route": nullable({"type": "string", "enum": list(routes)}) if routes else {"type": "null"},
            "standalone": nullable(_STR),
            "clarifying_question": nullable(_STR),
            "options": nullable(_STRS),
            "assumption": nullable(_STR),
            "semantic_query": nullable(_STR),
            "filters": nullable(filters) if filters else {"type": "null"},
        }
        return strict_object(props)


class VariantsOutput(_Out):
    variants: list[str]

    @staticmethod
    def json_schema() -> dict[str, Any]:
        return strict_object({"variants": _STRS})


class RerankOutput(_Out):
    order: list[int]  # passage numbers, most relevant first

    @staticmethod
    def json_schema() -> dict[str, Any]:
        return strict_object({"order": {"type": "array", "items": {"type": "integer"}}})


class PassageOutput(_Out):
    passage: str

    @staticmethod
    def json_schema() -> dict[str, Any]:
        return strict_object({"passage": _STR})


class QuestionOutput(_Out):
    question: str

    @staticmethod
    def json_schema() -> dict[str, Any]:
        return strict_object({"question": _STR})


ProbeOutput = QuestionOutput


def clean_filters(raw: Mapping[str, Any] | None) -> dict[str, Any]:
    """Drop null fields and null range bounds: what is left is what the model proposed."""
    out: dict[str, Any] = {}
    for key, value in (raw or {}).items():
        if isinstance(value, Mapping):
            value = {k: v for k, v in value.items() if v is not None}
            if not value:
                continue
        if value is None:
            continue
        out[key] = value
    return out
