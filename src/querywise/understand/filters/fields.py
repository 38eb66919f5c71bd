"""Which schema field a phrase fills: the price field, the release-year field, and a field's
aliases as a pattern."""

from __future__ import annotations

import re
from collections.abc import Mapping

from querywise.config import FilterSettings
from querywise.understand.filters.units import currency_of

__all__ = ["alias_alternation", "find_money_field", "find_year_field"]


def find_money_field(schema: FilterSettings, rates: Mapping[str, float]) -> str | None:
    """The price field: a number with a currency unit, else one called or aliased price/cost."""
    numeric = [(n, f) for n, f in schema.fields.items() if f.type in ("number", "integer")]
    for name, spec in numeric:
        if currency_of(spec.unit, rates) is not None:
            return name
    for name, spec in numeric:
        words = {name.lower(), *(a.lower() for a in spec.aliases)}
        if words & {"price", "cost"} or name.lower().startswith("price"):
            return name
    return None


def find_year_field(schema: FilterSettings) -> str | None:
    """The release-year field: a number named or aliased year/released/launched/date."""
    cues = ("year", "released", "release", "launched", "launch", "date")
    for name, spec in schema.fields.items():
        if spec.type not in ("number", "integer"):
            continue
        words = [name.lower(), *(a.lower() for a in spec.aliases)]
        if any(cue in w for w in words for cue in cues):
            return name
    return None


def alias_alternation(schema: FilterSettings, name: str | None) -> str:
    """The field's aliases as a regex alternation, longest first (a never-matching pattern if none)."""
    aliases = schema.fields[name].aliases if name else []
    return "|".join(re.escape(a.lower()) for a in sorted(aliases, key=len, reverse=True)) or r"(?!x)x"
