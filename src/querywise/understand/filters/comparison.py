"""Comparisons ("like the Kestrel ones but cheaper"): a similarity cue and a relative constraint
priced from the catalog, never a filter on the product or brand named."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from querywise.catalog import Catalog, Entity, Mention
from querywise.checks.filters import Span, allowed_values, format_number
from querywise.config import FilterSettings
from querywise.understand.filters.enums import form_alternation
from querywise.understand.filters.scan import Constraint, Scan, add_constraint

__all__ = ["SimilarityCue", "read_comparison"]


# relation -> (what it compares, operator): money and year by their fields, the rest by the unit
# dimension of the one field that measures it (pint's "[mass]", "[length]", "[time]").
_RELATIVE = {
    "cheaper": ("money", "lt"), "less expensive": ("money", "lt"), "more affordable": ("money", "lt"),
    "pricier": ("money", "gt"), "more expensive": ("money", "gt"),
    "newer": ("year", "gt"), "more recent": ("year", "gt"), "older": ("year", "lt"),
    "lighter": ("[mass]", "lt"), "heavier": ("[mass]", "gt"),
    "smaller": ("[length]", "lt"), "bigger": ("[length]", "gt"), "larger": ("[length]", "gt"),
    "longer lasting": ("[time]", "gt"), "longer battery": ("[time]", "gt"),
}
_WHAT = {"money": "price", "year": "year"}
_REL = "|".join(w.replace(" ", r"\s+") for w in sorted(_RELATIVE, key=len, reverse=True))
_LIKE_VERB = re.compile(r"(?:\b(?:i|we|you|they|would|do|don't|really|also|should)|'d)\s*$", re.IGNORECASE)


def _wish_before(message: str, end: int) -> bool:
    """`_LIKE_VERB.search(message[:end])`, reading only the spaces and the word just before `end`
    (the listed words are at most 6 characters long): searching the whole prefix for each "like"
    was quadratic."""
    start = end
    while start > 0 and message[start - 1].isspace():
        start -= 1
    return _LIKE_VERB.search(message, max(0, start - 7), end) is not None


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


def read_comparison(
    scan: Scan,
    schema: FilterSettings,
    catalog: Catalog | None,
    mentions: list[Mention],
    money_field: str | None,
    year_field: str | None,
    measured: Mapping[str, str] | None = None,
) -> tuple[SimilarityCue, tuple[Entity, ...]] | None:
    """"like the Kestrel ones but cheaper", "lighter than the Aero X2": a similarity cue and a
    relative constraint from the catalog value of what was named, never a filter on the brand or
    product named. `measured`: the field measuring each unit dimension ("[mass]" -> weight_g),
    for "lighter" and the like. Returns the cue and the entities it refers to."""
    if catalog is None:
        return None
    refs: dict[int, tuple[int, int, tuple[Entity, ...], bool]] = {}  # start -> the longest reference there (the first, on a tie)
    for found in _references(scan.message, schema, catalog, mentions):
        if found[0] not in refs or found[1] > refs[found[0]][1]:
            refs[found[0]] = found
    intro = re.compile(
        rf"(?<![\w-])(?:(?:something|anything|ones?|products?|models?)\s+)?(?:(?P<rel1>{_REL})\s+)?"
        rf"(?:like|similar\s+to|comparable\s+to|alternatives?\s+to|instead\s+of|(?P<rel2>{_REL})\s+than)"
        rf"\s+(?:the\s+|my\s+|a\s+|an\s+|those\s+|these\s+)?",
        re.IGNORECASE,
    )
    for m in intro.finditer(scan.message):
        ref = refs.get(m.end())
        if ref is None or not scan.free(m.start(), ref[1]):
            continue
        if m.group(0).lower().startswith("like") and _wish_before(scan.message, m.start()):
            continue  # "I'd like the Knoll Max": a wish, not a comparison
        _, ref_end, entities, group = ref
        end = ref_end
        tail = re.compile(rf"(?P<ones>\s+(?:ones|models))?(?:\s+(?:one|model))?(?:\s*,?\s*(?:but|and|only|just)?\s*(?P<rel3>{_REL})\b)?", re.IGNORECASE)
        t = tail.match(scan.message, end)
        group = group or bool(t is not None and t.group("ones"))
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
            fields = {"money": money_field, "year": year_field, **(measured or {})}
            constraint, note = _relative(scan, schema, catalog, " ".join(relation.lower().split()), entities, span, fields, group=group)
        cue = SimilarityCue(scan.message[span[0] : span[1]], span, reference, names,
                            " ".join(relation.lower().split()) if relation else None, constraint, note)
        return cue, entities
    return None


def _references(
    message: str, schema: FilterSettings, catalog: Catalog, mentions: list[Mention]
) -> list[tuple[int, int, tuple[Entity, ...], bool]]:
    """Spans naming catalog entities: product names and aliases, or an enum value ("Kestrel"),
    and whether the span names a group (an enum value: all its members) rather than one entity."""
    refs = [(m.start, m.end, m.entities, False) for m in mentions]
    for name, spec in schema.fields.items():
        if spec.type != "enum":
            continue
        key = spec.catalog_field or name
        for value in allowed_values(name, spec, catalog):
            found = list(re.finditer(rf"(?<![\w-]){form_alternation(value)}(?![\w-])", message, re.IGNORECASE))
            # the members only of a value the message names: the scan over the catalog is the cost
            members = tuple(e for e in catalog.entities if e.fields.get(key) == value) if found else ()
            refs += [(m.start(), m.end(), members, True) for m in found if members]
    return refs


def _of_the_kind_asked(message: str, schema: FilterSettings, catalog: Catalog, members: tuple[Entity, ...], reference: str) -> tuple[Entity, ...] | None:
    """The members of a group of the kind the message names ("headphones like the Halden ones"):
    a brand's cables are no price to beat. All of them when they are all of one kind ("the
    Kestrel ones": Kestrel makes headphones only); None when the message names no kind and the
    members are of several (which of them?)."""
    one_kind = False
    for name, spec in schema.fields.items():
        if spec.type != "enum":
            continue
        key = spec.catalog_field or name
        named = {v for v in allowed_values(name, spec, catalog) if re.search(rf"(?<![\w-]){form_alternation(v)}(?![\w-])", message, re.IGNORECASE)}
        kept = tuple(e for e in members if e.fields.get(key) in named and str(e.fields.get(key)).lower() not in reference.lower())
        if kept:
            return kept
        shared = {e.fields.get(key) for e in members}
        one_kind = one_kind or (len(shared) == 1 and not any(str(v).lower() in reference.lower() for v in shared))
    return members if one_kind else None


def _relative(
    scan: Scan,
    schema: FilterSettings,
    catalog: Catalog,
    relation: str,
    entities: tuple[Entity, ...],
    span: Span,
    fields: Mapping[str, str | None],
    *,
    group: bool,
) -> tuple[Constraint | None, str]:
    """The constraint relative to the catalog value of what was named. A group ("headphones like
    the Halden ones") is compared with each member of the kind asked: cheaper than all of them.
    One name that several entries share ("the Knoll"), or a group with no kind named ("something
    like the Halden ones"), is ambiguous: no value is invented for it."""
    kind, op = _RELATIVE[relation]
    field = fields.get(kind)
    if field is None:
        return None, f"no {_WHAT.get(kind, kind)} field in the schema"
    if group:  # compared with each member of the kind asked; of several kinds with none named: which members? none
        reference = scan.message[span[0] : span[1]]
        kind_asked = _of_the_kind_asked(scan.message, schema, catalog, entities, reference)
        group, entities = kind_asked is not None, kind_asked or entities
    values = [v for e in entities if isinstance(v := e.fields.get(field), int | float) and not isinstance(v, bool)]
    if not values:
        return None, f"{relation} than what? no catalog {field} for {', '.join(e.name for e in entities)}"
    if len(set(values)) > 1 and not group:
        listed = ", ".join(f"{e.name} {e.fields.get(field)}" for e in entities)
        return None, f"{relation} than what? the reference has several {field} values ({listed})"
    # Several ("the Kestrel ones"): cheaper than every one of them, so below the lowest.
    value = min(values) if op in ("lt", "lte") else max(values)
    which = next(e.name for e in entities if e.fields.get(field) == value)
    basis = f"{which}'s catalog {field} {format_number(value)}" + (f", the {'lowest' if op in ('lt', 'lte') else 'highest'} of {len(values)}" if len(values) > 1 else "")
    made = add_constraint(scan, schema, catalog, field, {op: value}, spans=(span,), provenance="stated", basis="comparison",
                          reason=f"{relation} than {', '.join(e.name for e in entities)} ({basis})")
    return made, ""
