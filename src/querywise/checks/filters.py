"""The filter validator: the one gate every proposed constraint passes, whoever proposed it (the
rules of `understand.filters`, an LLM, a person).

`validate_filters(raw, schema, catalog=...)` checks a proposed `{field: value}` mapping against the
schema: fields, types, enum values from the catalog, min/max. The per-field check (`check_value`)
and its helpers are public because the rule-based extractors validate each candidate with them.

Access fields (market, tenant...) come only from the session: a proposal or a message that names
them has them dropped with the reason `ACCESS_REASON` and `Dropped.access` set, never turned into a
filter.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from querywise.catalog import Catalog
from querywise.conditions import AnyOf, Condition, Match, NoneOf, Range, Where
from querywise.config import AccessSettings, FilterField, FilterSettings

__all__ = [
    "ACCESS_REASON",
    "Dropped",
    "Span",
    "access_names",
    "allowed_values",
    "check_value",
    "format_number",
    "validate_filters",
    "word_forms",
]

Span = tuple[int, int]

# The reason of every access drop. Recognise such a drop by `Dropped.access`, not by this text.
ACCESS_REASON = "access comes from the session"

# Session words a message may try to set when no AccessSettings are given.
_DEFAULT_ACCESS_WORDS = ("market", "tenant", "region", "country", "permission", "role", "org", "organization")


@dataclass(frozen=True)
class Dropped:
    """A constraint that was asked for but is not allowed, and why."""

    field: str
    value: Any
    reason: str
    span: Span | None = None
    access: bool = False  # True when dropped because access comes from the session (ACCESS_REASON)


_BOUNDS = ("gt", "gte", "lt", "lte")
_FLAT_OPS = {
    "below": "lt", "under": "lt", "lt": "lt", "less_than": "lt", "before": "lt",
    "max": "lte", "at_most": "lte", "up_to": "lte", "lte": "lte", "until": "lte",
    "above": "gt", "over": "gt", "gt": "gt", "more_than": "gt", "after": "gt",
    "min": "gte", "at_least": "gte", "from": "gte", "since": "gte", "gte": "gte",
    "between": "between", "not": "not", "except": "not", "excluding": "not",
}
_FLAT_KEY = re.compile(r"^(?P<stem>.+?)_(?P<op>" + "|".join(sorted(_FLAT_OPS, key=len, reverse=True)) + r")$")


def validate_filters(
    raw: Mapping[str, Any],
    schema: FilterSettings,
    *,
    catalog: Catalog | None,
    access: AccessSettings | None = None,
) -> tuple[Where, list[Dropped]]:
    """Check every proposed constraint; return the valid ones as a `Where` and the rest as `Dropped`.

    Accepted shapes: `{field: value}` (equality), `{field: [v1, v2]}` (any of), `{field: {"lt": 200,
    "gte": 10}}` (range), `{field: {"not": [v1, v2]}}` (none of: an exclusion, a must_not), and
    flat keys `<field or alias>_<op>` such as `price_below`, `released_after` or `brand_not` when
    the stem names exactly one field. Unknown fields, wrong types, enum values
    the catalog does not have, values outside min/max and access fields are dropped with a reason.

    >>> schema = FilterSettings(fields={"price_usd": FilterField(type="number", min=0, aliases=["price"])})
    >>> validate_filters({"price_below": 200, "colour": "red"}, schema, catalog=None)
    (Where(conditions=(Range(kind='range', field='price_usd', gt=None, gte=None, lt=200.0, lte=None),)), [Dropped(field='colour', value='red', reason='unknown field', span=None, access=False)])
    """
    conditions: list[Condition] = []
    dropped: list[Dropped] = []
    session_only = access_names(access)
    for key, value in raw.items():
        resolved = _resolve_key(str(key), value, schema, session_only)
        if isinstance(resolved, Dropped):
            dropped.append(resolved)
            continue
        name, spec = resolved
        condition, problems = check_value(name, schema.fields[name], spec, catalog)
        dropped += [Dropped(str(key), bad, why) for bad, why in problems]
        if condition is not None:
            conditions.append(condition)
    return Where(conditions=tuple(conditions)), dropped


def access_names(access: AccessSettings | None) -> dict[str, str]:
    """Every word that names a session-only field (singular and plural) -> its payload field: the
    configured ones, then common session words (market, tenant...) that no message may set either."""
    configured = list(access.fields.items()) if access is not None else []
    names: dict[str, str] = {}
    for key, payload_field in configured + [(w, w) for w in _DEFAULT_ACCESS_WORDS]:
        for word in (key, payload_field):
            for form in word_forms(word):
                names.setdefault(form, payload_field)
    return names


def _resolve_key(
    key: str, value: Any, schema: FilterSettings, session_only: Mapping[str, str]
) -> tuple[str, Any] | Dropped:
    """(field, spec), or the key dropped with the reason it cannot be used."""
    if key.lower() in session_only:
        return Dropped(key, value, ACCESS_REASON, access=True)
    exact = next((name for name in schema.fields if name.lower() == key.lower()), None)
    if exact is not None:
        return exact, value
    m = _FLAT_KEY.match(key)
    if m is None:
        return Dropped(key, value, "unknown field")
    stem, op = m.group("stem"), _FLAT_OPS[m.group("op")]
    if stem.lower() in session_only:
        return Dropped(key, value, ACCESS_REASON, access=True)
    fields = _fields_named(stem, schema)
    if len(fields) != 1:
        why = "names no field" if not fields else f"names several fields ({', '.join(fields)})"
        return Dropped(key, value, f"cannot map flat key: {stem!r} {why}")
    if op == "not":
        return fields[0], {"not": value}
    if op == "between":
        if not (isinstance(value, list | tuple) and len(value) == 2):
            return Dropped(key, value, "wrong type: _between needs [low, high]")
        return fields[0], {"gte": value[0], "lte": value[1]}
    return fields[0], {op: value}


def _fields_named(word: str, schema: FilterSettings) -> list[str]:
    """Fields called `word`: by name, by alias, or by a name starting `word_` (price -> price_usd)."""
    w = word.lower()
    if w in schema.fields:
        return [w]
    return [
        name
        for name, spec in schema.fields.items()
        if w in {a.lower() for a in spec.aliases} or name.lower().startswith(w + "_")
    ]


def check_value(
    name: str, spec: FilterField, value: Any, catalog: Catalog | None
) -> tuple[Condition | None, list[tuple[Any, str]]]:
    """The condition for `value` on one field, and any (value, reason) problems. `{"not": v}`
    excludes `v` (one value or a list) with the same checks as equality: a `NoneOf`."""
    if value is None:
        return None, [(value, "empty value")]
    if isinstance(value, Mapping) and set(value) == {"not"}:
        return _excluded(name, spec, value["not"], catalog)
    if spec.type in ("number", "integer"):
        return _check_number(name, spec, value)
    if isinstance(value, Mapping):
        return None, [(value, f"wrong type: a range needs a number field, {name} is {spec.type}")]
    items = list(value) if isinstance(value, list | tuple) else [value]
    allowed = allowed_values(name, spec, catalog)
    if spec.type == "enum" and not allowed:
        return None, [(value, "no allowed values known for this enum (no values, no catalog)")]
    kept: list[str] = []
    problems: list[tuple[Any, str]] = []
    for item in items:
        if not isinstance(item, str) or not item.strip():
            problems.append((item, f"wrong type: {spec.type} values are text"))
        elif allowed:
            canonical = _canonical(item, allowed)
            if canonical is None:
                problems.append((item, f"not in the catalog's values for {name} ({', '.join(allowed)})"))
            elif canonical not in kept:
                kept.append(canonical)
        elif item.strip() not in kept:
            kept.append(item.strip())
    if not kept:
        return None, problems
    if len(kept) == 1:
        return Match(field=name, value=kept[0]), problems
    return AnyOf(field=name, values=tuple(kept)), problems


def _excluded(name: str, spec: FilterField, value: Any, catalog: Catalog | None) -> tuple[Condition | None, list[tuple[Any, str]]]:
    """What equality on `value` would keep, excluded instead: the values are checked as for a match."""
    if isinstance(value, Mapping):
        return None, [(value, "wrong type: an exclusion lists values, not a range")]
    kept, problems = check_value(name, spec, value, catalog)
    if isinstance(kept, Match):
        return NoneOf(field=name, values=(kept.value,)), problems
    if isinstance(kept, AnyOf):
        return NoneOf(field=name, values=kept.values), problems
    return None, problems  # nothing valid to exclude (a fractional number has no exact value to exclude)


def _check_number(name: str, spec: FilterField, value: Any) -> tuple[Condition | None, list[tuple[Any, str]]]:
    if isinstance(value, Mapping):
        unknown = [k for k in value if k not in _BOUNDS]
        if unknown or not value:
            return None, [(value, f"unknown range operator(s) {unknown}; use {', '.join(_BOUNDS)}")]
        bounds: dict[str, Any] = {}  # floats, keyed by the Range bound they set
        for op, raw in value.items():
            number, why = _number(raw, spec)
            if why is not None:
                return None, [(value, why)]
            assert number is not None
            bounds[op] = number
        low = max((bounds[o] for o in ("gt", "gte") if o in bounds), default=-math.inf)
        high = min((bounds[o] for o in ("lt", "lte") if o in bounds), default=math.inf)
        strict = ("gt" in bounds and bounds["gt"] == low) or ("lt" in bounds and bounds["lt"] == high)
        if low > high or (low == high and strict):
            return None, [(value, "empty range: no value satisfies it")]
        return Range(field=name, **bounds), []
    items = list(value) if isinstance(value, list | tuple) else [value]
    kept: list[int] = []
    problems: list[tuple[Any, str]] = []
    for item in items:
        number, why = _number(item, spec)
        if why is not None:
            problems.append((item, why))
        elif number is not None and not float(number).is_integer():
            if len(items) == 1:  # equality on a fractional number: a closed range of one point
                return Range(field=name, gte=number, lte=number), []
            problems.append((item, "wrong type: any-of needs whole numbers"))
        elif number is not None and int(number) not in kept:
            kept.append(int(number))
    if not kept:
        return None, problems
    if len(kept) == 1:
        return Match(field=name, value=kept[0]), problems
    return AnyOf(field=name, values=tuple(kept)), problems


def _number(raw: Any, spec: FilterField) -> tuple[float | None, str | None]:
    """A number within the field's min/max, or the reason it is not one."""
    if isinstance(raw, bool) or not isinstance(raw, int | float | str):
        return None, f"wrong type: {spec.type} field needs a number, got {type(raw).__name__}"
    try:
        number = float(raw.replace(",", "")) if isinstance(raw, str) else float(raw)
    except ValueError:
        return None, f"wrong type: {spec.type} field needs a number, got {raw!r}"
    if not math.isfinite(number):
        return None, "wrong type: not a finite number"
    if spec.type == "integer" and not number.is_integer():
        return None, f"wrong type: integer field, got {raw!r}"
    if (spec.min is not None and number < spec.min) or (spec.max is not None and number > spec.max):
        return None, f"out of range [{format_number(spec.min)}, {format_number(spec.max)}]"
    return number, None


def allowed_values(name: str, spec: FilterField, catalog: Catalog | None) -> list[str]:
    """The field's enum values: listed in the settings, else the catalog's own wording."""
    if spec.values:
        return list(spec.values)
    if spec.type in ("enum", "list") and catalog is not None:
        return [str(v) for v in catalog.values(spec.catalog_field or name) if isinstance(v, str)]
    return []


@lru_cache(maxsize=16_384)  # the catalog's values, asked for by every plan's filters
def word_forms(word: str) -> frozenset[str]:
    """Singular and plural forms of the last word: speaker/speakers, watch/watches, accessory/ies."""
    w = word.lower().strip()
    head, _, last = w.rpartition(" ")
    prefix = head + " " if head else ""
    forms = {last}
    if last.endswith("ies") and len(last) > 4:
        forms.add(last[:-3] + "y")
    elif last.endswith("es") and last[:-2].endswith(("s", "x", "z", "ch", "sh")):
        forms.add(last[:-2])
    elif last.endswith("s") and not last.endswith("ss"):
        forms.add(last[:-1])
    if last.endswith("y") and len(last) > 2 and last[-2] not in "aeiou":
        forms.add(last[:-1] + "ies")
    elif last.endswith(("x", "z", "ch", "sh", "ss")):
        forms.add(last + "es")
    elif not last.endswith("s"):
        forms.add(last + "s")
    return frozenset(prefix + f for f in forms)


def _canonical(value: str, allowed: Iterable[str]) -> str | None:
    """The catalog's wording of `value` (case and number folded), if it is allowed."""
    wanted = word_forms(value)
    for candidate in allowed:
        if candidate.lower() == value.lower().strip() or wanted & word_forms(candidate):
            return candidate
    return None


def format_number(x: float | None) -> str:
    """A bound as reasons print it: 200.0 -> "200", 2.5 -> "2.5", None -> "-"."""
    if x is None:
        return "-"
    return str(int(x)) if float(x).is_integer() else f"{x:g}"
