"""Exclusions: "not from Kestrel", "without Lumen", "except the earbuds", "other than Northwind",
"headphones that aren't from Kestrel" -> a `NoneOf` (a must_not) on the field whose catalog value is
named, never the equality the bare value would give. A value the schema does not know ("without
noise cancelling") is left to the text: no filter is invented for it."""

from __future__ import annotations

import re
from collections.abc import Mapping

from querywise.catalog import Catalog
from querywise.checks.filters import allowed_values
from querywise.conditions import AnyOf, Match, NoneOf
from querywise.config import FilterSettings
from querywise.understand.filters.enums import form_alternation
from querywise.understand.filters.scan import Scan, add_constraint

__all__ = ["drop_implied_exclusions", "read_exclusions"]

# The words that turn the value after them into an exclusion (the value must be one of the
# schema's: "no noise cancelling" names no value, and stays words).
_CUE = (
    r"(?:(?:that|which|who)\s+)?(?:(?:is|are)\s+not|isn[’']?t|aren[’']?t|not|nothing|none)\s+(?:(?:made|sold|built)\s+)?(?:from|by|of)"
    r"|(?:do\s+not|don[’']?t)\s+(?:want|like|need)(?:\s+(?:anything|any))?(?:\s+(?:from|by))?"
    r"|not|no|without|except(?:\s+for)?|excluding|other\s+than|apart\s+from|but\s+not|rather\s+than"
)
_ARTICLE = r"(?:the\s+|a\s+|an\s+|any\s+)?"
_JOIN = r"\s*(?:,|\bor\b|\bnor\b|\band\b)\s*" + _ARTICLE


def read_exclusions(scan: Scan, schema: FilterSettings, catalog: Catalog | None, session_only: Mapping[str, str]) -> None:
    """Each enum value named after an exclusion cue, as a stated `NoneOf` on its field ("not from
    Kestrel or Lumen": brand none of both). Runs before the enum reader, so the value it takes is
    never read as a wish for it."""
    for name, spec in schema.fields.items():
        if spec.type not in ("enum", "list") or name.lower() in session_only:
            continue
        values = allowed_values(name, spec, catalog)
        if not values:
            continue
        value = "|".join(f"(?:{form_alternation(v)})" for v in sorted(values, key=len, reverse=True))
        pattern = re.compile(
            rf"(?<![\w-])(?:{_CUE})\s+{_ARTICLE}(?P<first>{value})(?P<more>(?:{_JOIN}(?:{value}))*)(?![\w-])", re.IGNORECASE
        )
        for m in pattern.finditer(scan.message):
            if not scan.free(m.start(), m.end()):
                continue
            said = [m.group("first"), *re.findall(rf"(?<![\w-])(?:{value})(?![\w-])", m.group("more"), re.IGNORECASE)]
            scan.claim(m.start(), m.end())
            add_constraint(scan, schema, catalog, name, {"not": said}, spans=((m.start(), m.end()),), provenance="stated",
                           basis="said", reason=f"{scan.message[m.start() : m.end()]!r} = {name} none of ({', '.join(said)})",
                           what="exclusion")


def drop_implied_exclusions(scan: Scan) -> None:
    """An exclusion the wanted value already implies ("headphones, not earbuds": category
    headphones excludes earbuds) says nothing more: it is left out, so the plan reads as meant."""
    wanted: dict[str, set[object]] = {}
    for c in scan.found:
        if isinstance(c.condition, Match):
            wanted.setdefault(c.field, set()).add(c.condition.value)
        elif isinstance(c.condition, AnyOf):
            wanted.setdefault(c.field, set()).update(c.condition.values)
    scan.found[:] = [c for c in scan.found if not (isinstance(c.condition, NoneOf) and c.field in wanted and not wanted[c.field] & set(c.condition.values))]
