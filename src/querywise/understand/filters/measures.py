"""Measures: "under 250 g", "lighter than 1.2 kg", "at least 40 hours", "6 inches or less" as
constraints on the filter field that is stored in a unit of the same dimension, converted to
that unit by pint (`units.convert`)."""

from __future__ import annotations

import re
from collections.abc import Mapping

from querywise.catalog import Catalog
from querywise.checks.filters import Dropped
from querywise.config import FilterSettings
from querywise.understand.filters.scan import Scan, add_constraint, comparison_ops
from querywise.understand.filters.units import convert, currency_of, dimension_of, parse_unit

__all__ = ["read_measures"]

_NUM = r"\d++(?:[.,]\d++)?"
_UNIT = r"[A-Za-z]+\.?|\"|″"
_OPS = comparison_ops(
    lt=r"lighter\s+than|shorter\s+than|smaller\s+than|thinner\s+than|narrower\s+than",
    gt=r"heavier\s+than|longer\s+than|bigger\s+than|larger\s+than|wider\s+than",
)
_OP = "|".join(f"(?P<{op}>{alts})" for op, alts in _OPS)
_PREFIX = re.compile(rf"(?<![\w-])(?:{_OP})\s*(?P<num>{_NUM})\s?(?P<unit>{_UNIT})(?![\w])", re.IGNORECASE)
_POSTFIX = re.compile(
    rf"(?<![\w.,-])(?P<num>{_NUM})\s?(?P<unit>{_UNIT})\s+or\s+(?:(?P<lte>less|under|below|lighter|shorter|smaller)|(?P<gte>more|over|above|heavier|longer|bigger))\b",
    re.IGNORECASE,
)
_INCH = {'"': "inch", "″": "inch"}


def read_measures(scan: Scan, schema: FilterSettings, catalog: Catalog | None, rates: Mapping[str, float]) -> None:
    """Each compared quantity whose unit pint knows, as a constraint on the field of its dimension;
    dropped with the reason when no field, or more than one, measures that dimension."""
    fields = {name: spec.unit for name, spec in schema.fields.items() if spec.type in ("number", "integer") and spec.unit and currency_of(spec.unit, rates) is None}
    if not fields:
        return  # no measured field: a quantity is just words ("40 hours of battery")
    dims = {name: dimension_of(unit, rates) for name, unit in fields.items()}
    for pattern in (_PREFIX, _POSTFIX):
        for m in pattern.finditer(scan.message):
            span = (m.start(), m.end())
            if not scan.free(*span):
                continue
            word = _INCH.get(m.group("unit"), m.group("unit").rstrip("."))
            unit = parse_unit(word, rates)
            dim = str(unit.dimensionality) if unit is not None else ""
            if unit is None or "[currency]" in dim:
                continue  # no unit pint knows ("under 3 years old"), or money: the price reader's
            candidates = [n for n, d in dims.items() if d == dim]
            if len(candidates) > 1:
                said = scan.message.lower()
                named = [n for n in candidates if any(a.lower() in said for a in (n, *schema.fields[n].aliases))]
                candidates = named if len(named) == 1 else candidates
            text = scan.message[span[0] : span[1]]
            scan.claim(*span)
            if len(candidates) != 1:
                why = f"no filter field measures {dim}" if not candidates else f"{' and '.join(candidates)} all measure {dim}; name one"
                scan.dropped.append(Dropped(candidates[0] if candidates else "measure", text, why, span))
                continue
            name = candidates[0]
            field_unit = fields[name]
            assert field_unit is not None
            value, note = convert(float(m.group("num").replace(",", ".")), word, field_unit, rates)
            if value is None:
                scan.dropped.append(Dropped(name, text, note, span))
                continue
            op = next(o for o, _ in _OPS if m.group(o)) if pattern is _PREFIX else ("lte" if m.group("lte") else "gte")
            said_op = " ".join((m.group(op) or "").lower().split())
            add_constraint(scan, schema, catalog, name, {op: value}, spans=(span,), provenance="stated", basis="said",
                           reason=f"{said_op or 'or ' + op} = {op}" + (f" ({note})" if note else ""), what="measure")
