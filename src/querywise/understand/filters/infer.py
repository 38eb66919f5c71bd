"""Constraints inferred from named products: the enum values every product the message names
shares ("Knoll under $150" -> category speaker). Inferred, so the executor relaxes them first."""

from __future__ import annotations

import re

from querywise.catalog import Catalog, Entity, Mention
from querywise.checks.filters import Span
from querywise.config import FilterSettings
from querywise.understand.filters.money import AFTER_BARE
from querywise.understand.filters.scan import Scan, add_constraint
from querywise.understand.filters.semantic import CONNECTORS

__all__ = ["infer_from_entities", "infer_from_mentions"]


# Words after a product name that leave it the head of its phrase ("Knoll under $150").
_HEAD_FOLLOWERS = CONNECTORS | AFTER_BARE | {
    "under", "below", "beneath", "over", "above", "less", "more", "up", "no", "not", "between", "cheaper",
    "around", "about", "roughly", "budget", "that", "which", "sold", "or",
}


_NEXT_WORD = re.compile(r"\s*([^\W\d_]+)")


def infer_from_mentions(scan: Scan, schema: FilterSettings, catalog: Catalog, mentions: list[Mention]) -> None:
    """A product family named next to a stated constraint ("Knoll under $150") implies its enum
    values (category speaker): inferred, so relaxed first when nothing matches."""
    stated = {c.field for c in scan.found}
    for m in mentions:
        nxt = _NEXT_WORD.match(scan.message, m.end)
        if nxt is not None and nxt.group(1).lower() not in _HEAD_FOLLOWERS:
            continue  # "Tide straps": the product only modifies the noun that follows
        infer_from_entities(scan, schema, catalog, m.entities, m.text, comparison=False, span=(m.start, m.end), stated=stated)


def infer_from_entities(
    scan: Scan,
    schema: FilterSettings,
    catalog: Catalog,
    entities: tuple[Entity, ...],
    reference: str,
    *,
    comparison: bool,
    span: Span | None = None,
    stated: set[str] | None = None,
) -> None:
    """Enum values every referenced entity shares. A comparison asks for alternatives, so it never
    implies a value the reference itself names or that is part of the names (the brand).
    `stated`: the fields `scan.found` already constrains, kept up to date here when passed (a
    caller that infers from many mentions need not collect them again for each)."""
    if stated is None:
        stated = {c.field for c in scan.found}
    for name, spec in schema.fields.items():
        if spec.type != "enum" or name in stated:
            continue
        key = spec.catalog_field or name
        values = {e.fields.get(key) for e in entities}
        if len(values) != 1:
            continue
        (value,) = values
        if not isinstance(value, str):
            continue
        if comparison and (value.lower() in reference.lower() or all(value.lower() in e.name.lower() for e in entities)):
            continue
        names = ", ".join(e.name for e in entities)
        if add_constraint(scan, schema, catalog, name, value, spans=(span,) if span else (), provenance="inferred", basis="catalog",
                          reason=f"{name} {value} implied by {names}") is not None:
            stated.add(name)
