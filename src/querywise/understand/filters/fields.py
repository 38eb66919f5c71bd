"""Which schema field a phrase fills: the price field, the release-year field, the field a bare
number belongs to, and a field's aliases as a pattern."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping

from querywise.catalog import Catalog
from querywise.checks.filters import allowed_values, word_forms
from querywise.config import FilterSettings
from querywise.understand.filters.units import currency_of, dimension_of

__all__ = ["alias_alternation", "bare_number_field", "find_money_field", "find_year_field", "measured_fields"]


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


def measured_fields(schema: FilterSettings, rates: Mapping[str, float]) -> dict[str, str]:
    """The field measuring each unit dimension ("[mass]" -> weight_g), for dimensions exactly one
    numeric field with a (non-currency) unit measures. pint loads only when a field has a unit."""
    by_dim: dict[str, list[str]] = {}
    for name, spec in schema.fields.items():
        if spec.type in ("number", "integer") and spec.unit and currency_of(spec.unit, rates) is None:
            if (dim := dimension_of(spec.unit, rates)) is not None:
                by_dim.setdefault(dim, []).append(name)
    return {dim: names[0] for dim, names in by_dim.items() if len(names) == 1}


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


_NOT_A_NAME = {"total", "number", "count", "average"}  # first words of field names that name nothing alone


def _named(words: set[str], message: str) -> bool:
    return any(re.search(rf"(?<![\w-]){re.escape(w)}(?![\w-])", message, re.IGNORECASE) for w in words if w)


def _field_words(name: str, aliases: list[str]) -> set[str]:
    """How a message names a field: its name in words, its first word ("battery" for
    battery_hours) and its aliases."""
    words = name.lower().replace("_", " ")
    first = words.split()[0]
    return {words, *([first] if len(first) > 3 and first not in _NOT_A_NAME else []), *(a.lower() for a in aliases)}


def bare_number_field(
    message: str, bounds: Mapping[str, float], schema: FilterSettings, catalog: Catalog | None, money_field: str | None, year_field: str | None,
    *, in_unit: Callable[[str, float], float] = lambda field, x: x,
) -> tuple[str | None, str]:
    """The field a number said without a unit or currency belongs to ("battery life over 40",
    "earbuds under 150"), and why; None when it cannot be told, with the reason for the trace.
    `bounds`: the range said ({"lt": 150}); `in_unit(field, x)`: x in the unit the field stores
    (a price field in cents: 150 -> 15000), to compare with the catalog's values.

    A numeric filter field the message names ("battery", an alias); else none when it names a
    numeric catalog field that is no filter field (the number is about it, not about the price);
    else the one numeric field the range fits: within its min/max (never the year field: years
    are read by their own reader) and, with a catalog, telling its entries apart -- of the kind
    the message names (earbuds), some meet it and some do not: "earbuds under 70" is no weight
    (every earbud weighs less) and no battery life (every one lasts less), so it is the price.
    Never the price by default: with two fields that fit, the number stays in the query."""
    numeric = {n: f for n, f in schema.fields.items() if f.type in ("number", "integer")}
    named = [n for n, f in numeric.items() if _named(_field_words(n, f.aliases), message)]
    if len(named) == 1:
        return named[0], f"the message names {named[0]}"
    if len(named) > 1:
        return None, f"a number without a unit, and the message names {' and '.join(named)}: left in the query"
    if catalog is not None:
        others = [k for k in dict.fromkeys(k for e in catalog.entities for k in e.fields)
                  if k not in numeric and any(isinstance(e.fields.get(k), int | float) for e in catalog.entities)]
        about = [k for k in others if _named(_field_words(k, []), message)]
        if about:
            return None, f"a number about {about[0]}, which is no filter field: left in the query"
    numbers = list(bounds.values())
    fit = [n for n, f in numeric.items() if n != year_field
           and all((f.min is None or x >= f.min) and (f.max is None or x <= f.max) for x in numbers)]
    if catalog is not None and len(fit) > 1:
        telling = [n for n in fit if _tells_apart(n, {op: in_unit(n, x) for op, x in bounds.items()}, schema, catalog, message)]
        fit = telling or fit
    if len(fit) == 1:
        return fit[0], "the only numeric field it fits" + (" (the price)" if fit[0] == money_field else "")
    if not fit:
        return None, "a number without a unit that fits no numeric filter field: left in the query"
    return None, f"a number without a unit fits {' and '.join(fit)}: left in the query (say the unit)"


def _tells_apart(name: str, bounds: Mapping[str, float], schema: FilterSettings, catalog: Catalog, message: str) -> bool:
    """Whether the range on `name` keeps some and not all of the catalog entries of the kind the
    message names (an enum value it says), or of all entries when it names none. A field the
    catalog has no values for cannot be judged: it fits."""
    key = schema.fields[name].catalog_field or name
    named: list[tuple[str, set[str]]] = []
    for field, spec in schema.fields.items():
        if spec.type in ("enum", "list"):
            said = {v for v in allowed_values(field, spec, catalog) if _named(set(word_forms(v)), message)}
            if said:
                named.append((spec.catalog_field or field, said))
    members = [e for e in catalog.entities if all(e.fields.get(k) in vs for k, vs in named)] or list(catalog.entities)
    values = [v for e in members if isinstance(v := e.fields.get(key), int | float) and not isinstance(v, bool)]
    if not values:
        return True
    ops = {"gt": lambda v, b: v > b, "gte": lambda v, b: v >= b, "lt": lambda v, b: v < b, "lte": lambda v, b: v <= b}
    kept = sum(all(ops[op](v, b) for op, b in bounds.items() if op in ops) for v in values)
    return 0 < kept < len(values)
