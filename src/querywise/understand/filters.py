"""Hard constraints from a message: extracted by rules, validated in code, relaxed only when inferred.

Two entry points share one validator, so nothing invalid reaches the engine whoever proposed it:

- `extract_filters(message, schema, catalog=..., today=...)` reads prices, years and dates and the
  enum values of the schema from the message, and returns the constraints (each with its provenance
  and the span of text it came from), the `semantic_query` left once the constraint phrases are
  removed, what was `dropped` and why, and a similarity cue ("like the Knoll but cheaper").
- `validate_filters(raw, schema, catalog=...)` checks any proposed `{field: value}` mapping (an LLM's
  output later) against the schema: fields, types, enum values from the catalog, min/max.

Access fields (market, tenant...) come only from the session: a message that names them ("and set
market to us") has them dropped with the reason `ACCESS_REASON`, never turned into a filter.

Dates are computed from the injected `today`, never from the clock. Amounts in another currency are
converted to the field's `unit` with a fixed rate table (`DEFAULT_RATES`, or `rates=`).

    >>> ex = extract_filters("speakers under $150", schema, catalog=catalog, today=date(2025, 6, 1))  # doctest: +SKIP
    >>> ex.where, ex.semantic_query                                                                 # doctest: +SKIP
"""

from __future__ import annotations

import calendar
import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import date
from types import MappingProxyType
from typing import Any, Literal, NamedTuple

from querywise.catalog import Catalog, Entity, Mention
from querywise.conditions import AnyOf, Match, Range, Where
from querywise.config import AccessSettings, FilterField, FilterSettings

__all__ = [
    "ACCESS_REASON",
    "DEFAULT_RATES",
    "Constraint",
    "Dropped",
    "FilterExtraction",
    "Relaxation",
    "SimilarityCue",
    "extract_filters",
    "relaxations",
    "validate_filters",
]

Provenance = Literal["stated", "inferred"]
# How a constraint was obtained. Stated: "said" (the words name it), "comparison" (a stated
# relative, "cheaper than the Knoll Mini", priced from the catalog). Inferred: "catalog" (implied
# by a product the message names), "compound" ("smartwatch" read as watch), "operator" (an amount
# without a comparison word, "for $150", read as a budget).
Basis = Literal["said", "comparison", "catalog", "compound", "operator"]
Span = tuple[int, int]
Condition = Match | AnyOf | Range

ACCESS_REASON = "access comes from the session"

# USD value of one unit of each currency: fixed round figures close to the 2024 averages, not live
# rates. A deployment that needs other or exact rates passes its own table as `rates=`. Yen amounts
# are recognised but have no rate here, so they are dropped with a reason unless the table has "jpy".
DEFAULT_RATES: Mapping[str, float] = MappingProxyType({"usd": 1.0, "eur": 1.08, "gbp": 1.27})

# Session words a message may try to set when no AccessSettings are given.
_DEFAULT_ACCESS_WORDS = ("market", "tenant", "region", "country", "permission", "role", "org", "organization")
# Relaxation order: weakest inference first. Stated constraints are never relaxed.
_RELAX_ORDER: dict[Basis, int] = {"catalog": 0, "compound": 1, "operator": 2}


@dataclass(frozen=True)
class Constraint:
    """One validated hard constraint and where it came from."""

    field: str
    condition: Condition
    provenance: Provenance
    basis: Basis
    spans: tuple[Span, ...]  # character offsets into the message; () when implied by nothing typed
    text: str  # the words it came from, as typed
    reason: str  # how those words became the condition
    period: tuple[date | None, date | None] | None = None  # calendar interval of a date phrase

    def describe(self) -> str:
        """`price_usd < 200`, `category = headphones`, `released in (2024, 2025)`."""
        c = self.condition
        if isinstance(c, Match):
            return f"{c.field} = {c.value}"
        if isinstance(c, AnyOf):
            return f"{c.field} in ({', '.join(map(str, c.values))})"
        ops = [("gt", ">"), ("gte", ">="), ("lt", "<"), ("lte", "<=")]
        return " and ".join(f"{c.field} {sym} {_num(getattr(c, op))}" for op, sym in ops if getattr(c, op) is not None)


@dataclass(frozen=True)
class Dropped:
    """A constraint that was asked for but is not allowed, and why."""

    field: str
    value: Any
    reason: str
    span: Span | None = None


@dataclass(frozen=True)
class SimilarityCue:
    """A product or brand named as a comparison ("like the Kestrel ones but cheaper"): a cue for
    similarity search, not a filter on that product or brand."""

    text: str
    span: Span
    reference: str  # the words naming what to compare with
    entities: tuple[str, ...]  # catalog names it refers to
    relation: str | None  # "cheaper", "pricier", "newer", "older", or None for plain "like X"
    constraint: Constraint | None  # the relative constraint, when the reference has one value
    note: str = ""


@dataclass(frozen=True)
class FilterExtraction:
    """What `extract_filters` read from a message."""

    message: str
    semantic_query: str
    constraints: tuple[Constraint, ...]
    dropped: tuple[Dropped, ...]
    similar: SimilarityCue | None = None
    # Enum values named in a message that is not a product search ("Can I return earbuds after
    # opening them?"): what the message is about, not a filter.
    mentioned: tuple[Constraint, ...] = ()

    @property
    def where(self) -> Where:
        return Where(conditions=tuple(c.condition for c in self.constraints))

    @property
    def stated(self) -> tuple[Constraint, ...]:
        return tuple(c for c in self.constraints if c.provenance == "stated")

    @property
    def inferred(self) -> tuple[Constraint, ...]:
        return tuple(c for c in self.constraints if c.provenance == "inferred")


class Relaxation(NamedTuple):
    """A filter set with some inferred constraints removed, and which ones."""

    where: Where
    relaxed: tuple[Constraint, ...]


# --------------------------------------------------------------------------------------------
# Validation: the one gate for every proposed constraint.
# --------------------------------------------------------------------------------------------

_BOUNDS = ("gt", "gte", "lt", "lte")
_FLAT_OPS = {
    "below": "lt", "under": "lt", "lt": "lt", "less_than": "lt", "before": "lt",
    "max": "lte", "at_most": "lte", "up_to": "lte", "lte": "lte", "until": "lte",
    "above": "gt", "over": "gt", "gt": "gt", "more_than": "gt", "after": "gt",
    "min": "gte", "at_least": "gte", "from": "gte", "since": "gte", "gte": "gte",
    "between": "between",
}  # fmt: skip
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
    "gte": 10}}` (range), and flat keys `<field or alias>_<op>` such as `price_below` or
    `released_after` when the stem names exactly one field. Unknown fields, wrong types, enum values
    the catalog does not have, values outside min/max and access fields are dropped with a reason.

    >>> schema = FilterSettings(fields={"price_usd": FilterField(type="number", min=0, aliases=["price"])})
    >>> validate_filters({"price_below": 200, "colour": "red"}, schema, catalog=None)
    (Where(conditions=(Range(kind='range', field='price_usd', gt=None, gte=None, lt=200.0, lte=None),)), [Dropped(field='colour', value='red', reason='unknown field', span=None)])
    """
    conditions: list[Condition] = []
    dropped: list[Dropped] = []
    session_only = _access_names(access)
    for key, value in raw.items():
        name, spec, problem = _resolve_key(str(key), value, schema, session_only)
        if problem is not None:
            dropped.append(Dropped(str(key), value, problem))
            continue
        assert name is not None
        condition, problems = _check(name, schema.fields[name], spec, catalog)
        dropped += [Dropped(str(key), bad, why) for bad, why in problems]
        if condition is not None:
            conditions.append(condition)
    return Where(conditions=tuple(conditions)), dropped


def _access_names(access: AccessSettings | None) -> dict[str, str]:
    """Every word that names a session-only field (singular and plural) -> its payload field: the
    configured ones, then common session words (market, tenant...) that no message may set either."""
    configured = list(access.fields.items()) if access is not None else []
    names: dict[str, str] = {}
    for key, payload_field in configured + [(w, w) for w in _DEFAULT_ACCESS_WORDS]:
        for word in (key, payload_field):
            for form in _forms(word):
                names.setdefault(form, payload_field)
    return names


def _resolve_key(
    key: str, value: Any, schema: FilterSettings, session_only: Mapping[str, str]
) -> tuple[str | None, Any, str | None]:
    """(field, spec, None), or (None, None, why not)."""
    if key.lower() in session_only:
        return None, None, ACCESS_REASON
    exact = next((name for name in schema.fields if name.lower() == key.lower()), None)
    if exact is not None:
        return exact, value, None
    m = _FLAT_KEY.match(key)
    if m is None:
        return None, None, "unknown field"
    stem, op = m.group("stem"), _FLAT_OPS[m.group("op")]
    if stem.lower() in session_only:
        return None, None, ACCESS_REASON
    fields = _fields_named(stem, schema)
    if len(fields) != 1:
        why = "names no field" if not fields else f"names several fields ({', '.join(fields)})"
        return None, None, f"cannot map flat key: {stem!r} {why}"
    if op == "between":
        if not (isinstance(value, list | tuple) and len(value) == 2):
            return None, None, "wrong type: _between needs [low, high]"
        return fields[0], {"gte": value[0], "lte": value[1]}, None
    return fields[0], {op: value}, None


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


def _check(
    name: str, spec: FilterField, value: Any, catalog: Catalog | None
) -> tuple[Condition | None, list[tuple[Any, str]]]:
    """The condition for `value` on one field, and any (value, reason) problems."""
    if value is None:
        return None, [(value, "empty value")]
    if spec.type in ("number", "integer"):
        return _check_number(name, spec, value)
    if isinstance(value, Mapping):
        return None, [(value, f"wrong type: a range needs a number field, {name} is {spec.type}")]
    items = list(value) if isinstance(value, list | tuple) else [value]
    allowed = _allowed_values(name, spec, catalog)
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


def _check_number(name: str, spec: FilterField, value: Any) -> tuple[Condition | None, list[tuple[Any, str]]]:
    if isinstance(value, Mapping):
        unknown = [k for k in value if k not in _BOUNDS]
        if unknown or not value:
            return None, [(value, f"unknown range operator(s) {unknown}; use {', '.join(_BOUNDS)}")]
        bounds: dict[str, float] = {}
        for op, raw in value.items():
            number, why = _number(raw, spec)
            if why is not None:
                return None, [(value, why)]
            assert number is not None
            bounds[op] = number
        low = max((bounds[o] for o in ("gt", "gte") if o in bounds), default=-math.inf)
        high = min((bounds[o] for o in ("lt", "lte") if o in bounds), default=math.inf)
        strict = "gt" in bounds and bounds["gt"] == low or "lt" in bounds and bounds["lt"] == high
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
        return None, f"out of range [{_num(spec.min)}, {_num(spec.max)}]"
    return number, None


def _allowed_values(name: str, spec: FilterField, catalog: Catalog | None) -> list[str]:
    """The field's enum values: listed in the settings, else the catalog's own wording."""
    if spec.values:
        return list(spec.values)
    if spec.type in ("enum", "list") and catalog is not None:
        return [str(v) for v in catalog.values(spec.catalog_field or name) if isinstance(v, str)]
    return []


def _forms(word: str) -> set[str]:
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
    return {prefix + f for f in forms}


def _canonical(value: str, allowed: Iterable[str]) -> str | None:
    """The catalog's wording of `value` (case and number folded), if it is allowed."""
    wanted = _forms(value)
    for candidate in allowed:
        if candidate.lower() == value.lower().strip() or wanted & _forms(candidate):
            return candidate
    return None


def _num(x: float | None) -> str:
    if x is None:
        return "-"
    return str(int(x)) if float(x).is_integer() else f"{x:g}"


# --------------------------------------------------------------------------------------------
# Extraction
# --------------------------------------------------------------------------------------------

_CURRENCY = {
    "$": "usd", "us$": "usd", "usd": "usd", "dollar": "usd", "dollars": "usd", "buck": "usd", "bucks": "usd",
    "€": "eur", "eur": "eur", "euro": "eur", "euros": "eur",
    "£": "gbp", "gbp": "gbp", "pound": "gbp", "pounds": "gbp", "quid": "gbp",
    "¥": "jpy", "jpy": "jpy", "yen": "jpy",
}  # fmt: skip
_NUM = r"\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?"


def _amount(tag: str) -> str:
    """An amount with an optional currency before or after: $150, 150 bucks, €180, 180 euros."""
    return (
        rf"(?:(?P<{tag}pre>us\$|[$€£¥]|\b(?:usd|eur|gbp|jpy)\b)\s?)?"
        rf"(?<![\w.,-])(?P<{tag}num>{_NUM})(?![\d,]*\d)"
        rf"(?:\s?(?P<{tag}post>dollars?|bucks?|usd|euros?|eur|pounds?|gbp|quid|yen|jpy|[€$£¥])(?![a-z]))?"
        rf"(?![\w-])"
    )


_MONEY_OPS = (
    ("lt", r"less\s+than|lower\s+than|cheaper\s+than|under|below|beneath|<(?!=)"),
    ("lte", r"up\s+to|at\s+most|no\s+more\s+than|not\s+more\s+than|max(?:imum)?(?:\s+of)?|<=|≤"),
    ("gt", r"more\s+than|greater\s+than|higher\s+than|over|above|>(?!=)"),
    ("gte", r"at\s+least|no\s+less\s+than|min(?:imum)?(?:\s+of)?|starting\s+(?:at|from)|from|>=|≥"),
)
_MONEY_LEAD = r"(?:(?:that|which)\s+)?(?:(?:is|are|costs?|costing|priced(?:\s+at)?|prices?|sells?\s+for|for|{aliases})\s+)?"
_YEAR_LEAD = (
    r"(?P<lead>(?:(?:that|which)\s+(?:was|were|is|are)\s+)?"
    r"(?:(?:released|launched|introduced|made|came\s+out|come\s+out|out|{aliases})\s+)?)"
)
_YEAR = r"(?<![\w$€£¥.-])(?:19|20)\d{2}(?![\w-]|\s?(?:dollars?|bucks?|usd|euros?|eur|pounds?|gbp|quid|yen|jpy|[$€£¥]))"
_YEAR_OPS = (
    ("gt", r"after|later\s+than|newer\s+than"),
    ("gte", r"since|in\s+or\s+after|starting(?:\s+(?:in|from))?|as\s+of|from"),
    ("lt", r"before|earlier\s+than|older\s+than|prior\s+to"),
    ("lte", r"in\s+or\s+before|until|till|up\s+to|through|no\s+later\s+than"),
    ("eq", r"in|during"),
)
_MONTHS = {name.lower(): i for i, name in enumerate(calendar.month_name) if name} | {
    name.lower(): i for i, name in enumerate(calendar.month_abbr) if name
}
# A date phrase after these (and no release word) is about the user's own purchase, not a release.
_PERSONAL = re.compile(r"\b(?:bought|buy|ordered|order|purchased?|got|received|delivered|returned|my|i)\b", re.I)
# Words that may follow a bare number (no currency) for it to still read as an amount.
_AFTER_BARE = {"and", "or", "but", "with", "that", "which", "for", "in", "on", "please", "released", "launched",
               "from", "since", "after", "before", "total", "tops", "each", "max", "only"}  # fmt: skip
# Words left dangling next to a removed phrase ("headphones for | , and |").
_CONNECTORS = {"and", "or", "but", "also", "then", "please", "that", "which", "with", "is", "are", "was", "were",
               "for", "at", "released", "launched", "introduced", "priced", "costing", "cost", "costs", "made",
               "in", "to", "only", "sold", "available", "the", "a", "an", "so", "just"}  # fmt: skip
# Words after a product name that leave it the head of its phrase ("Knoll under $150").
_HEAD_FOLLOWERS = _CONNECTORS | _AFTER_BARE | {
    "under", "below", "beneath", "over", "above", "less", "more", "up", "no", "not", "between", "cheaper",
    "around", "about", "roughly", "budget", "that", "which", "sold", "or",
}  # fmt: skip
_RELATIVE = {
    "cheaper": ("money", "lt"), "less expensive": ("money", "lt"), "more affordable": ("money", "lt"),
    "pricier": ("money", "gt"), "more expensive": ("money", "gt"),
    "newer": ("year", "gt"), "more recent": ("year", "gt"), "older": ("year", "lt"),
}  # fmt: skip
_REL = "|".join(w.replace(" ", r"\s+") for w in sorted(_RELATIVE, key=len, reverse=True))
_SEARCH_VERB = re.compile(
    r"\b(?:show|find|looking\s+for|look\s+for|recommend|suggest|list|search|browse|shop\s+for|want\s+(?:a|an|some)|"
    r"need\s+(?:a|an|some)|cheapest|best)\b",
    re.I,
)
# First words of a question or a statement about oneself, rather than of a product search.
_QUESTION_START = {
    "can", "could", "does", "do", "did", "is", "are", "was", "were", "will", "would", "should", "how", "what",
    "what's", "why", "when", "where", "who", "which", "my", "i", "i'm", "i've", "i'd", "it", "it's", "its",
    "there", "please", "help", "tell", "hi", "hello", "thanks", "ok", "and", "but",
}  # fmt: skip
_LIKE_VERB = re.compile(r"(?:\b(?:i|we|you|they|would|do|don't|really|also|should)|'d)\s*$", re.I)
_VERBS_BEFORE = re.compile(r"\b(?:to|can|could|i|you|we|they|will|would|should|not|don't|do|did|and)\s+$", re.I)


@dataclass
class _Scan:
    """Mutable state of one extraction: what has been read, and which text is taken."""

    message: str
    claimed: list[Span] = field(default_factory=list)
    kept: list[Span] = field(default_factory=list)  # claimed, but stays in the semantic query
    found: list[Constraint] = field(default_factory=list)
    dropped: list[Dropped] = field(default_factory=list)

    def free(self, start: int, end: int) -> bool:
        return all(end <= s or start >= e for s, e in self.claimed)

    def claim(self, start: int, end: int, *, remove: bool = True) -> None:
        self.claimed.append((start, end))
        if not remove:
            self.kept.append((start, end))

    def removed(self) -> list[Span]:
        return [s for s in self.claimed if s not in self.kept]


def extract_filters(
    message: str,
    schema: FilterSettings,
    *,
    catalog: Catalog | None,
    today: date,
    access: AccessSettings | None = None,
    rates: Mapping[str, float] = DEFAULT_RATES,
) -> FilterExtraction:
    """Read the hard constraints a message states, by rule, and validate each one.

    Prices ("under $200" -> lt, "up to" -> lte, "over" -> gt, "at least" -> gte, "between 100 and
    200" -> gte and lte), years and dates ("after 2024" -> gt 2024, "since 2023" -> gte, "released
    last month" from `today`), and enum values in the catalog's wording ("speakers" -> speaker).
    Access fields named in the message are dropped (`access` says which fields they are; without it a
    default list of session words is used). Enum words stay in the semantic query; price and date
    phrases and access instructions ("set market to us") leave it; when nothing else is left the
    message is searched as typed. Enum values become filters only in a product search ("noise
    cancelling headphones"), not in a question about the product ("can I return earbuds?"): those
    are reported as `mentioned`.

    Provenance: a constraint is `stated` when the words say it, `inferred` when derived (a category
    implied by a named product, "smartwatch" read as watch, "for $150" read as a budget); only
    inferred ones are ever relaxed (`relaxations`). `rates` gives the USD value of each currency
    for fields whose `unit` is a currency.
    """
    scan = _Scan(message)
    session_only = _access_names(access)
    _read_access(scan, session_only, catalog)
    money_field, year_field = _money_field(schema, rates), _year_field(schema)
    mentions = catalog.mentions(message) if catalog is not None else []
    compared = _read_comparison(scan, schema, catalog, mentions, money_field, year_field)
    cue = compared[0] if compared else None
    _read_years(scan, schema, catalog, year_field, today)
    _read_money(scan, schema, catalog, money_field, rates)
    searching = bool(scan.found) or cue is not None or _is_product_search(message)
    before = len(scan.found)
    taken_by_names = [(m.start, m.end) for m in mentions]
    _read_enums(scan, schema, catalog, session_only, skip=taken_by_names + ([cue.span] if cue else []))
    mentioned: tuple[Constraint, ...] = ()
    if not searching:  # "Can I return earbuds after opening them?" asks about earbuds; it is no search
        mentioned, scan.found[before:] = tuple(scan.found[before:]), []
    if catalog is not None and compared is not None:
        _infer_from_entities(scan, schema, catalog, compared[1], compared[0].reference, comparison=True)
    if catalog is not None and any(c.provenance == "stated" for c in scan.found):
        named = [m for m in mentions if cue is None or not _inside((m.start, m.end), cue.span)]
        _infer_from_mentions(scan, schema, catalog, named)
    constraints = tuple(sorted(scan.found, key=lambda c: (c.spans[0][0] if c.spans else len(message), c.field)))
    return FilterExtraction(
        message=message,
        semantic_query=_semantic_query(message, scan.removed(), fallback=cue.reference if cue else message),
        constraints=constraints,
        dropped=tuple(scan.dropped),
        mentioned=mentioned,
        similar=cue,
    )


def relaxations(extraction: FilterExtraction) -> list[Relaxation]:
    """Progressively relaxed filter sets, each dropping one more *inferred* constraint.

    Weakest inference first (implied by a named product, then a compound word, then an amount read
    as a budget). Stated constraints stay in every set: when the last set still finds nothing, the
    executor names the stated constraint that left no results instead of silently dropping it.
    """
    order = sorted(
        (c for c in extraction.constraints if c.provenance == "inferred"),
        key=lambda c: _RELAX_ORDER.get(c.basis, 9),
    )
    out: list[Relaxation] = []
    for i in range(1, len(order) + 1):
        gone = tuple(order[:i])
        kept = tuple(c.condition for c in extraction.constraints if c not in gone)
        out.append(Relaxation(Where(conditions=kept), gone))
    return out


# --- fields -----------------------------------------------------------------------------------


def _money_field(schema: FilterSettings, rates: Mapping[str, float]) -> str | None:
    """The price field: a number with a currency unit, else one called or aliased price/cost."""
    numeric = [(n, f) for n, f in schema.fields.items() if f.type in ("number", "integer")]
    for name, spec in numeric:
        if spec.unit and spec.unit.lower() in rates:
            return name
    for name, spec in numeric:
        words = {name.lower(), *(a.lower() for a in spec.aliases)}
        if words & {"price", "cost"} or name.lower().startswith("price"):
            return name
    return None


def _year_field(schema: FilterSettings) -> str | None:
    """The release-year field: a number named or aliased year/released/launched/date."""
    cues = ("year", "released", "release", "launched", "launch", "date")
    for name, spec in schema.fields.items():
        if spec.type not in ("number", "integer"):
            continue
        words = [name.lower(), *(a.lower() for a in spec.aliases)]
        if any(cue in w for w in words for cue in cues):
            return name
    return None


def _alias_alt(schema: FilterSettings, name: str | None) -> str:
    aliases = schema.fields[name].aliases if name else []
    return "|".join(re.escape(a.lower()) for a in sorted(aliases, key=len, reverse=True)) or r"(?!x)x"


def _add(
    scan: _Scan,
    schema: FilterSettings,
    catalog: Catalog | None,
    name: str | None,
    spec: Any,
    *,
    spans: tuple[Span, ...],
    provenance: Provenance,
    basis: Basis,
    reason: str,
    period: tuple[date | None, date | None] | None = None,
    what: str = "constraint",
) -> Constraint | None:
    """Validate one candidate; keep it as a constraint or record why it was dropped."""
    text = " / ".join(scan.message[s:e] for s, e in spans)
    span = spans[0] if spans else None
    if name is None:
        scan.dropped.append(Dropped(what, text, f"no {what} field in the schema", span))
        return None
    condition, problems = _check(name, schema.fields[name], spec, catalog)
    scan.dropped += [Dropped(name, spec if len(problems) == 1 else bad, why, span) for bad, why in problems]
    if condition is None:
        return None
    made = Constraint(name, condition, provenance, basis, spans, text, reason, period)
    scan.found.append(made)
    return made


# --- access -------------------------------------------------------------------------------------


def _read_access(scan: _Scan, session_only: Mapping[str, str], catalog: Catalog | None) -> None:
    """Drop every session-only field the message names; it never becomes a filter or access."""
    if not session_only:
        return
    keys = "|".join(re.escape(k) for k in sorted(session_only, key=len, reverse=True))
    lead = r"(?:,\s*)?(?:(?:and|also|then|please|now)\s+)*"
    # Instructions ("set market to us", "market: us") leave the semantic query; descriptions
    # ("in the us market", "sold in the EU") stay in it, as words of the question, but set nothing.
    patterns = [
        (rf"{lead}(?:set|change|switch|make|use|put)\s+(?:my\s+|the\s+|our\s+)?(?P<key>{keys})\s+(?:to|=|as|into)\s+(?:the\s+)?(?P<value>[\w-]+)", True),
        (rf"(?P<key>{keys})\s*[:=]\s*(?P<value>[\w-]+)", True),
        (rf"(?:in|for|from)\s+(?:the\s+)?(?P<value>[\w-]+)\s+(?P<key>{keys})\b", False),
    ]
    for pattern, instruction in patterns:
        for m in re.finditer(rf"(?<![\w-]){pattern}", scan.message, re.I):
            if scan.free(m.start(), m.end()):
                scan.claim(m.start(), m.end(), remove=instruction)
                payload = session_only[m.group("key").lower()]
                scan.dropped.append(Dropped(payload, m.group("value").lower(), ACCESS_REASON, (m.start(), m.end())))
    if catalog is None:
        return
    for payload in dict.fromkeys(session_only.values()):
        values = [str(v) for v in catalog.values(payload) if isinstance(v, str)]
        if not values:
            continue
        alt = "|".join(re.escape(v) for v in sorted(values, key=len, reverse=True))
        said = (
            rf"(?:(?:that\s+(?:is|are)\s+)?(?:sold|available|shipped|shipping|offered|delivered)\s+(?:only\s+)?(?:in|to)\s+(?P<the1>the\s+)?(?P<v1>{alt})(?:\s+only)?"
            rf"|(?:in|for|from)\s+(?P<the2>the\s+)(?P<v2>{alt})"
            rf"|(?P<v3>{alt})[\s-]only)"
        )
        for m in re.finditer(rf"(?<![\w-]){said}(?![\w-])", scan.message, re.I):
            word = m.group("v1") or m.group("v2") or m.group("v3")
            # Short values ("us") are also words: count them only after "the" or when written in capitals.
            if len(word) <= 3 and not (m.group("the1") or m.group("the2")) and not word.isupper():
                continue
            if scan.free(m.start(), m.end()):
                scan.claim(m.start(), m.end(), remove=False)
                scan.dropped.append(Dropped(payload, word.lower(), ACCESS_REASON, (m.start(), m.end())))


# --- comparisons ---------------------------------------------------------------------------------


def _read_comparison(
    scan: _Scan,
    schema: FilterSettings,
    catalog: Catalog | None,
    mentions: list[Mention],
    money_field: str | None,
    year_field: str | None,
) -> tuple[SimilarityCue, tuple[Entity, ...]] | None:
    """"like the Kestrel ones but cheaper": a similarity cue and a relative constraint, never a
    filter on the brand or product named. Returns the cue and the entities it refers to."""
    if catalog is None:
        return None
    refs = _references(scan.message, schema, catalog, mentions)
    intro = re.compile(
        rf"(?<![\w-])(?:(?:something|anything|ones?|products?|models?)\s+)?(?:(?P<rel1>{_REL})\s+)?"
        rf"(?:like|similar\s+to|comparable\s+to|alternatives?\s+to|instead\s+of|(?P<rel2>{_REL})\s+than)"
        rf"\s+(?:the\s+|my\s+|a\s+|an\s+|those\s+|these\s+)?",
        re.I,
    )
    for m in intro.finditer(scan.message):
        ref = max((r for r in refs if r[0] == m.end()), key=lambda r: r[1], default=None)
        if ref is None or not scan.free(m.start(), ref[1]):
            continue
        if m.group(0).lower().startswith("like") and _LIKE_VERB.search(scan.message[: m.start()]):
            continue  # "I'd like the Knoll Max": a wish, not a comparison
        _, ref_end, entities = ref
        end = ref_end
        tail = re.compile(rf"(?:\s+(?:ones?|models?))?(?:\s*,?\s*(?:but|and|only|just)?\s*(?P<rel3>{_REL})\b)?", re.I)
        t = tail.match(scan.message, end)
        relation = m.group("rel1") or m.group("rel2")
        if t is not None:
            relation = relation or t.group("rel3")
            end = t.end()
        span = (m.start(), end)
        scan.claim(*span)
        reference = scan.message[m.end() : ref_end]
        names = tuple(e.name for e in entities)
        constraint, note = None, ""
        if relation is not None:
            constraint, note = _relative(scan, schema, catalog, " ".join(relation.lower().split()), entities, span,
                                         money_field, year_field)  # fmt: skip
        cue = SimilarityCue(scan.message[span[0] : span[1]], span, reference, names,
                            " ".join(relation.lower().split()) if relation else None, constraint, note)  # fmt: skip
        return cue, entities
    return None


def _references(
    message: str, schema: FilterSettings, catalog: Catalog, mentions: list[Mention]
) -> list[tuple[int, int, tuple[Entity, ...]]]:
    """Spans naming catalog entities: product names and aliases, or an enum value ("Kestrel")."""
    refs = [(m.start, m.end, m.entities) for m in mentions]
    for name, spec in schema.fields.items():
        if spec.type != "enum":
            continue
        key = spec.catalog_field or name
        for value in _allowed_values(name, spec, catalog):
            for m in re.finditer(rf"(?<![\w-]){_form_alt(value)}(?![\w-])", message, re.I):
                members = tuple(e for e in catalog.entities if e.fields.get(key) == value)
                if members:
                    refs.append((m.start(), m.end(), members))
    return refs


def _relative(
    scan: _Scan,
    schema: FilterSettings,
    catalog: Catalog,
    relation: str,
    entities: tuple[Entity, ...],
    span: Span,
    money_field: str | None,
    year_field: str | None,
) -> tuple[Constraint | None, str]:
    kind, op = _RELATIVE[relation]
    field = money_field if kind == "money" else year_field
    if field is None:
        return None, f"no {'price' if kind == 'money' else 'year'} field in the schema"
    values = {e.fields.get(field) for e in entities}
    if len(values) != 1 or not isinstance(next(iter(values)), int | float):
        listed = ", ".join(f"{e.name} {e.fields.get(field)}" for e in entities)
        return None, f"{relation} than what? the reference has several {field} values ({listed})"
    (value,) = values
    made = _add(scan, schema, catalog, field, {op: value}, spans=(span,), provenance="stated", basis="comparison",
                reason=f"{relation} than {', '.join(e.name for e in entities)} ({field} {_num(value)})")  # fmt: skip
    return made, ""


# --- years and dates -----------------------------------------------------------------------------


def _read_years(scan: _Scan, schema: FilterSettings, catalog: Catalog | None, field: str | None, today: date) -> None:
    lead = _YEAR_LEAD.format(aliases=_alias_alt(schema, field))
    ops = "|".join(f"(?P<{op}>{alts})" for op, alts in _YEAR_OPS)
    months = "|".join(sorted(_MONTHS, key=len, reverse=True))
    rel_lead = r"(?P<lead>(?:released|launched|introduced|made|came\s+out|come\s+out|out)\s+(?:in\s+|during\s+|within\s+)?|(?P<since>since)\s+|from\s+)"
    readers = [
        (rf"{lead}(?:between\s+(?P<a>{_YEAR})\s+and|from\s+(?P<a2>{_YEAR})\s+(?:to|until|through))\s+(?P<b>{_YEAR})", "between"),
        (rf"{lead}(?:in\s+|from\s+)?(?P<y>{_YEAR})\s+or\s+(?:(?P<gte>later|newer|after|more\s+recent)|(?P<lte>earlier|older|before))", "postfix"),
        (rf"{lead}(?:in\s+|during\s+)?(?P<month>{months})\.?\s+(?P<y>{_YEAR})", "month"),
        (rf"{lead}(?:{ops})\s+(?:the\s+year\s+)?(?P<y>{_YEAR})", "op"),
        (rf"(?P<lead>(?:released|launched|introduced)\s+)(?P<y>{_YEAR})", "bare"),
        (rf"{rel_lead}(?:the\s+)?(?:last|past)\s+(?P<n>\d+)\s+(?P<unit>years?|months?)", "rolling"),
        (rf"{rel_lead}(?P<rel>last|this|previous|the\s+past|past|the\s+last)\s+(?P<unit>year|month)", "relative"),
    ]
    for pattern, kind in readers:
        for m in re.finditer(rf"(?<![\w-]){pattern}", scan.message, re.I):
            if not scan.free(m.start(), m.end()):
                continue
            if not m.group("lead") and kind != "bare" and _personal_before(scan.message, m.start()):
                continue  # "I bought it in 2023" is about the purchase, not the release
            spec, period, why = _year_spec(m, kind, today)
            scan.claim(m.start(), m.end())
            _add(scan, schema, catalog, field, spec, spans=((m.start(), m.end()),), provenance="stated",
                 basis="said", reason=why, period=period, what="year")  # fmt: skip


def _personal_before(message: str, start: int) -> bool:
    before = re.split(r"[,.;!?]", message[max(0, start - 40) : start])[-1]
    return bool(_PERSONAL.search(before))


def _year_spec(m: re.Match[str], kind: str, today: date) -> tuple[Any, tuple[date | None, date | None], str]:
    """The validator spec, the calendar interval and the reason for one date phrase."""
    g = m.groupdict()
    if kind == "between":
        a, b = int(g["a"] or g["a2"]), int(g["b"])
        return {"gte": a, "lte": b}, (date(a, 1, 1), date(b, 12, 31)), f"between {a} and {b}, both included"
    if kind == "postfix":
        y = int(g["y"])
        if g["gte"]:
            return {"gte": y}, (date(y, 1, 1), None), f"{y} or {g['gte']} = gte {y}"
        return {"lte": y}, (None, date(y, 12, 31)), f"{y} or {g['lte']} = lte {y}"
    if kind == "op":
        y = int(g["y"])
        op = next(o for o, _ in _YEAR_OPS if g.get(o))
        word = " ".join(g[op].lower().split())
        periods = {"gt": (date(y + 1, 1, 1), None), "gte": (date(y, 1, 1), None), "lt": (None, date(y - 1, 12, 31)),
                   "lte": (None, date(y, 12, 31)), "eq": (date(y, 1, 1), date(y, 12, 31))}  # fmt: skip
        spec = y if op == "eq" else {op: y}
        return spec, periods[op], f"{word} {y} = {'equals' if op == 'eq' else op} {y}"
    if kind == "bare":
        y = int(g["y"])
        return y, (date(y, 1, 1), date(y, 12, 31)), f"released {y}"
    if kind == "month":
        y, month = int(g["y"]), _MONTHS[g["month"].lower()]
        period = (date(y, month, 1), date(y, month, calendar.monthrange(y, month)[1]))
        return _coarse(period, f"{g['month']} {y}")
    if kind == "rolling":
        n, unit = int(g["n"]), g["unit"].lower()
        start = _months_back(today, 12 * n if unit.startswith("year") else n)
        why = f"the last {n} {unit} before {today.isoformat()} = since {start.isoformat()}, kept at the field's year granularity"
        return {"gte": start.year}, (start, today), why
    # relative: last/this year/month
    rel, unit = " ".join(g["rel"].lower().split()), g["unit"].lower()
    back = 0 if rel == "this" else 1
    if unit == "year":
        y = today.year - back
        period = (date(y, 1, 1), date(y, 12, 31))
    else:
        first = _months_back(today.replace(day=1), back)
        period = (first, date(first.year, first.month, calendar.monthrange(first.year, first.month)[1]))
    spec, _, why = _coarse(period, f"{rel} {unit} from {today.isoformat()}")
    if g.get("since"):
        return {"gte": period[0].year}, (period[0], None), f"since {rel} {unit} = gte {period[0].year}"
    return spec, period, why


def _coarse(period: tuple[date, date], said: str) -> tuple[Any, tuple[date | None, date | None], str]:
    """A calendar interval on a field that holds years: the years it touches (a superset)."""
    start, end = period
    why = f"{said} = {start.isoformat()}..{end.isoformat()}, kept at the field's year granularity"
    if start.year == end.year:
        return start.year, (start, end), why
    return {"gte": start.year, "lte": end.year}, (start, end), why


def _months_back(day: date, months: int) -> date:
    """The same day `months` earlier, clipped to the month's length (Mar 31 - 1 month = Feb 28/29)."""
    index = day.year * 12 + (day.month - 1) - months
    year, month = divmod(index, 12)
    return date(year, month + 1, min(day.day, calendar.monthrange(year, month + 1)[1]))


# --- money -------------------------------------------------------------------------------------


def _read_money(
    scan: _Scan, schema: FilterSettings, catalog: Catalog | None, field: str | None, rates: Mapping[str, float]
) -> None:
    lead = _MONEY_LEAD.format(aliases=_alias_alt(schema, field))
    ops = "|".join(f"(?P<{op}>{alts})" for op, alts in _MONEY_OPS)
    readers = [
        (rf"(?P<lead>{lead})between\s+{_amount('a')}\s+and\s+{_amount('b')}", "range"),
        (rf"(?P<lead>{lead})from\s+{_amount('a')}\s+to\s+{_amount('b')}", "range"),
        (rf"(?P<lead>{lead}){_amount('a')}\s*(?:-|–|to)\s*{_amount('b')}", "dash"),
        (rf"(?P<lead>{lead}){_amount('a')}\s+(?:or\s+(?P<lte>less|under|below|cheaper)|(?:or|and)\s+(?P<gte>more|over|above|up))\b", "postfix"),
        (rf"(?P<lead>{lead})(?:{ops})\s*(?:the\s+)?{_amount('a')}", "op"),
        (rf"(?P<lead>)(?P<budget>budget(?:\s+(?:of|is))?:?)\s*{_amount('a')}", "budget"),
        (rf"(?P<lead>){_amount('a')}\s+(?P<budget>budget)", "budget"),
        (rf"(?P<lead>)(?P<word>for|around|about|roughly|approximately|approx\.?|~)\s*{_amount('a')}", "bare"),
    ]
    for pattern, kind in readers:
        for m in re.finditer(rf"(?<![\w-]){pattern}", scan.message, re.I):
            if not scan.free(m.start(), m.end()):
                continue
            g = m.groupdict()
            currency = _currency(g, "a") or _currency(g, "b")
            if currency is None and kind in ("bare", "dash"):
                continue  # "for 2", "2023-2025": an amount needs its currency here
            if currency is None and kind != "budget" and not _bare_ok(scan.message, m.end()):
                continue  # a number with no currency and a noun after it ("over 30 hours") is not a price
            amounts = [_parse(g["anum"])] + ([_parse(g["bnum"])] if g.get("bnum") else [])
            converted = [_convert(a, currency, field and schema.fields[field].unit, rates) for a in amounts]
            span = (m.start(), m.end())
            scan.claim(*span)
            failed = next((why for value, why in converted if value is None), None)
            if failed is not None:
                scan.dropped.append(Dropped(field or "price", scan.message[span[0] : span[1]], failed, span))
                continue
            values = [v for v, _ in converted]
            notes = "; ".join(why for _, why in converted if why)
            spec, provenance, basis, why = _money_spec(kind, g, values)
            _add(scan, schema, catalog, field, spec, spans=(span,), provenance=provenance, basis=basis,
                 reason=why + (f" ({notes})" if notes else ""), what="price")  # fmt: skip


def _money_spec(kind: str, g: dict[str, Any], values: list[float]) -> tuple[Any, Provenance, Basis, str]:
    if kind in ("range", "dash"):
        low, high = sorted(values)
        return {"gte": low, "lte": high}, "stated", "said", f"between {_num(low)} and {_num(high)}, both included"
    if kind == "postfix":
        op = "lte" if g.get("lte") else "gte"
        return {op: values[0]}, "stated", "said", f"or {g.get('lte') or g.get('gte')} = {op}"
    if kind == "op":
        op = next(o for o, _ in _MONEY_OPS if g.get(o))
        return {op: values[0]}, "stated", "said", f"{' '.join(g[op].lower().split())} = {op}"
    if kind == "budget":
        return {"lte": values[0]}, "stated", "said", "a budget = lte"
    word = g["word"].lower()
    if word == "for":
        return {"lte": values[0]}, "inferred", "operator", "an amount with no comparison word, read as a budget (lte)"
    v = values[0]
    return {"gte": round(v * 0.9, 2), "lte": round(v * 1.1, 2)}, "inferred", "operator", f"{word} {_num(v)} read as +/-10%"


def _currency(g: Mapping[str, Any], tag: str) -> str | None:
    word = g.get(f"{tag}pre") or g.get(f"{tag}post")
    return _CURRENCY.get(word.lower()) if word else None


def _parse(raw: str) -> float:
    return float(raw.replace(",", ""))


def _convert(amount: float, currency: str | None, unit: str | None, rates: Mapping[str, float]) -> tuple[float | None, str]:
    """The amount in the field's unit, and a note when it was converted or assumed."""
    if unit is None or currency is None:
        return amount, (f"no currency given: read as {unit}" if unit and currency is None else "")
    unit = unit.lower()
    if currency == unit:
        return amount, ""
    if currency not in rates or unit not in rates:
        return None, f"cannot convert {currency} to {unit}: no rate in the table"
    value = round(amount * rates[currency] / rates[unit], 2)
    return value, f"{_num(amount)} {currency} = {_num(value)} {unit} at the fixed rate {rates[currency] / rates[unit]:g}"


def _bare_ok(message: str, end: int) -> bool:
    """A number without currency is read as an amount only if what follows is not a noun of its own."""
    nxt = re.match(r"\s*([^\W\d_]+|%)", message[end:])
    return nxt is None or nxt.group(1).lower() in _AFTER_BARE


# --- enums -------------------------------------------------------------------------------------


def _form_alt(value: str) -> str:
    return "|".join(re.escape(f).replace(r"\ ", r"[\s-]+") for f in sorted(_forms(value), key=len, reverse=True))


def _read_enums(
    scan: _Scan, schema: FilterSettings, catalog: Catalog | None, session_only: Mapping[str, str], skip: list[Span]
) -> None:
    """Enum values in the catalog's wording; several values of one field become any-of. Words inside
    a product name or a comparison are part of that name, not a filter."""
    for name, spec in schema.fields.items():
        if spec.type not in ("enum", "list") or name.lower() in session_only:
            continue
        allowed = _allowed_values(name, spec, catalog)
        said: dict[str, list[Span]] = {}
        compound: dict[str, list[Span]] = {}
        for value in allowed:
            for m in re.finditer(rf"(?<![\w-])(?:{_form_alt(value)})(?![\w-])", scan.message, re.I):
                if any(_inside((m.start(), m.end()), s) for s in skip) or not scan.free(m.start(), m.end()):
                    continue
                if m.group(0).lower() == value.lower() and _VERBS_BEFORE.search(scan.message[: m.start()]):
                    continue  # "I want to watch films", "I plan to": a verb, not a category
                said.setdefault(value, []).append((m.start(), m.end()))
            if len(value) >= 4 and " " not in value:  # "smartwatch" -> watch: a compound ending in the value
                for m in re.finditer(rf"(?<![\w-])[^\W\d_]{{3,}}(?:{_form_alt(value)})(?![\w-])", scan.message, re.I):
                    if not any(_inside((m.start(), m.end()), s) for s in skip):
                        compound.setdefault(value, []).append((m.start(), m.end()))
        chosen = said or compound
        provenance: Provenance = "stated" if said else "inferred"
        basis: Basis = "said" if said else "compound"
        if not chosen:
            continue
        values = list(chosen)
        spans = tuple(sorted(s for v in values for s in chosen[v]))
        words = ", ".join(repr(scan.message[s:e]) for s, e in spans)
        why = f"{words} = {name} {' or '.join(values)}" + ("" if said else " (a compound word ending in the value)")
        _add(scan, schema, catalog, name, values[0] if len(values) == 1 else values, spans=spans,
             provenance=provenance, basis=basis, reason=why)  # fmt: skip


def _is_product_search(message: str) -> bool:
    """A search for products ("noise cancelling headphones", "show me speakers"), not a question
    about them ("can I return earbuds...?", "my earbuds keep cutting out")."""
    if _SEARCH_VERB.search(message):
        return True
    first = re.match(r"\s*([\w']+)", message)
    return first is not None and first.group(1).lower() not in _QUESTION_START and not message.rstrip().endswith("?")


def _inside(inner: Span, outer: Span) -> bool:
    return outer[0] <= inner[0] and inner[1] <= outer[1]


# --- inferred from named products -------------------------------------------------------------


def _infer_from_mentions(scan: _Scan, schema: FilterSettings, catalog: Catalog, mentions: list[Mention]) -> None:
    """A product family named next to a stated constraint ("Knoll under $150") implies its enum
    values (category speaker): inferred, so relaxed first when nothing matches."""
    for m in mentions:
        nxt = re.match(r"\s*([^\W\d_]+)", scan.message[m.end :])
        if nxt is not None and nxt.group(1).lower() not in _HEAD_FOLLOWERS:
            continue  # "Tide straps": the product only modifies the noun that follows
        _infer_from_entities(scan, schema, catalog, m.entities, m.text, comparison=False, span=(m.start, m.end))


def _infer_from_entities(
    scan: _Scan,
    schema: FilterSettings,
    catalog: Catalog,
    entities: tuple[Entity, ...],
    reference: str,
    *,
    comparison: bool,
    span: Span | None = None,
) -> None:
    """Enum values every referenced entity shares. A comparison asks for alternatives, so it never
    implies a value the reference itself names or that is part of the names (the brand)."""
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
        _add(scan, schema, catalog, name, value, spans=(span,) if span else (), provenance="inferred", basis="catalog",
             reason=f"{name} {value} implied by {names}")  # fmt: skip


# --- the text left for search ----------------------------------------------------------------


def _semantic_query(message: str, claimed: list[Span], *, fallback: str) -> str:
    """The message without the constraint phrases, and without words left dangling at their edges."""
    spans = sorted(claimed)
    pieces: list[tuple[str, bool, bool]] = []  # (text, span before, span after)
    pos = 0
    for start, end in spans:
        pieces.append((message[pos:start], pos > 0, True))
        pos = max(pos, end)
    pieces.append((message[pos:], bool(spans), False))
    kept = [p for p in (_trim(text, left, right) for text, left, right in pieces) if p]
    query = " ".join(" ".join(kept).split())
    return query if re.search(r"\w", query) else fallback


def _trim(text: str, left: bool, right: bool) -> str:
    words = text.split()
    while left and words and (words[0].lower().strip(",;:-") in _CONNECTORS or not re.search(r"\w", words[0])):
        words.pop(0)
    while right and words and (words[-1].lower().strip(",;:-") in _CONNECTORS or not re.search(r"\w", words[-1])):
        words.pop()
    if right and words:
        words[-1] = words[-1].rstrip(",;:-")
    return " ".join(words)
