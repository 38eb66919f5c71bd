"""Exclusions: "not from Kestrel", "without Lumen", "except the earbuds", "other than Northwind",
"headphones that aren't from Kestrel" -> a `NoneOf` (a must_not) on the field whose catalog value is
named, never the equality the bare value would give. A value the schema does not know ("without
noise cancelling") is left to the text: no filter is invented for it."""

from __future__ import annotations

import re
from collections.abc import Mapping

from querywise.catalog import Catalog
from querywise.checks.filters import allowed_values
from querywise.config import FilterSettings
from querywise.understand.filters.enums import form_alternation
from querywise.understand.filters.scan import Scan, add_constraint

__all__ = ["read_exclusions"]

# The words that turn the value after them into an exclusion. "no" is left out on purpose: "no
# noise cancelling" names a feature, and "no Kestrel" is rare enough to be read as words.
_CUE = (
    r"(?:(?:that|which|who)\s+)?(?:(?:is|are)\s+not|isn[’']?t|aren[’']?t|not|nothing|none)\s+(?:(?:made|sold|built)\s+)?(?:from|by|of)"
    r"|not|without|except(?:\s+for)?|excluding|other\s+than|apart\s+from|but\s+not|rather\s+than"
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
