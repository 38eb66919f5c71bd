"""What a filter does to the documents that do not carry its field: the `[filters]` policy
(`missing`, `catalog_link`) written into each condition, for the engine to execute."""

from __future__ import annotations

from querywise.catalog import Catalog
from querywise.conditions import Condition, Linked, NoneOf, Where
from querywise.config import FilterSettings

__all__ = ["with_missing_policy"]


def with_missing_policy(where: Where, schema: FilterSettings, catalog: Catalog | None) -> Where:
    """`where` with each condition on a schema field told what a document without the field gets:
    its `missing` policy, and, with a `catalog_link` and a catalog, the entries (names and ids)
    whose catalog value meets the condition -- a document that links to one of them passes.

    Conditions on other fields (access is never one) are left as they are. An exclusion (`NoneOf`,
    "not from Kestrel") keeps the documents without the field, but with a `catalog_link` and a
    catalog it also excludes the documents about the excluded entries (a help article about the
    Kestrel K7 carries no brand, yet is from Kestrel).

    >>> from querywise.conditions import Range
    >>> schema = FilterSettings.model_validate({"fields": {"price": {"type": "number"}}})
    >>> with_missing_policy(Where(conditions=(Range(field="price", lt=200),)), schema, None).conditions[0].missing
    'keep'
    """
    conditions: list[Condition] = []
    for c in where.conditions:
        conditions.append(_with_policy(c, schema, catalog))
        if isinstance(c, NoneOf) and (about := _about_excluded(c, schema, catalog)) is not None:
            conditions.append(about)
    return Where(conditions=tuple(conditions))


def _about_excluded(c: NoneOf, schema: FilterSettings, catalog: Catalog | None) -> NoneOf | None:
    """The link field none of whose entries has an excluded value, or None (no link, no catalog,
    no entry with the value, or the condition is on the link itself)."""
    spec = schema.fields.get(c.field)
    link = schema.catalog_link
    if spec is None or link is None or catalog is None or c.field == link:
        return None
    key = spec.catalog_field or c.field
    excluded = [e for e in catalog.entities if key in e.fields and not c.matches({c.field: e.fields[key]})]
    values = tuple(dict.fromkeys(v for e in excluded for v in (e.name, e.id)))
    return NoneOf(field=link, values=values) if values else None


def _with_policy(c: Condition, schema: FilterSettings, catalog: Catalog | None) -> Condition:
    spec = schema.fields.get(c.field)
    if spec is None or isinstance(c, NoneOf) or c.linked is not None:
        return c
    linked = None
    if schema.catalog_link is not None and catalog is not None:
        key = spec.catalog_field or c.field
        meet = [e for e in catalog.entities if key in e.fields and c.matches({c.field: e.fields[key]})]
        linked = Linked(field=schema.catalog_link, values=tuple(dict.fromkeys(v for e in meet for v in (e.name, e.id))))
    return c.model_copy(update={"missing": spec.missing, "linked": linked})
