"""Enum values in the catalog's wording ("speakers" -> speaker, "smartwatch" -> watch), and whether
the message is a product search at all (only then are they filters)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from functools import lru_cache

from querywise.catalog import Catalog
from querywise.checks.filters import Span, allowed_values, word_forms
from querywise.config import FilterSettings
from querywise.understand.filters.scan import (
    Basis,
    Provenance,
    Scan,
    Within,
    add_constraint,
)

__all__ = ["form_alternation", "is_product_search", "read_enums"]


_SEARCH_VERB = re.compile(
    r"\b(?:show|find|looking\s+for|look\s+for|recommend|suggest|list|search|browse|shop\s+for|want\s+(?:a|an|some)|"
    r"need\s+(?:a|an|some)|cheapest|best)\b",
    re.IGNORECASE,
)
# First words of a question or a statement about oneself, rather than of a product search.
_QUESTION_START = {
    "can", "could", "does", "do", "did", "is", "are", "was", "were", "will", "would", "should", "how", "what",
    "what's", "why", "when", "where", "who", "which", "my", "i", "i'm", "i've", "i'd", "it", "it's", "its",
    "there", "please", "help", "tell", "hi", "hello", "thanks", "ok", "and", "but",
}
_VERBS_BEFORE = re.compile(r"\b(?:to|can|could|i|you|we|they|will|would|should|not|don't|do|did|and)\s+$", re.IGNORECASE)


def _verb_before(message: str, end: int) -> bool:
    """`_VERBS_BEFORE.search(message[:end])`, reading only the spaces and the word just before
    `end` (searching the whole prefix for every enum word was quadratic). The listed words are
    at most 6 characters long."""
    start = end
    while start > 0 and message[start - 1].isspace():
        start -= 1
    return _VERBS_BEFORE.search(message, max(0, start - 7), end) is not None


@lru_cache(maxsize=16_384)
def form_alternation(value: str) -> str:
    """The singular and plural forms of `value` as a regex alternation, longest first."""
    return "|".join(re.escape(f).replace(r"\ ", r"[\s-]+") for f in sorted(word_forms(value), key=len, reverse=True))


def read_enums(
    scan: Scan, schema: FilterSettings, catalog: Catalog | None, session_only: Mapping[str, str], skip: list[Span]
) -> None:
    """Enum values in the catalog's wording; several values of one field become any-of. Words inside
    a product name or a comparison are part of that name, not a filter."""
    skipped = Within(skip)
    for name, spec in schema.fields.items():
        if spec.type not in ("enum", "list") or name.lower() in session_only:
            continue
        allowed = allowed_values(name, spec, catalog)
        said: dict[str, list[Span]] = {}
        compound: dict[str, list[Span]] = {}
        for value in allowed:
            for m in re.finditer(rf"(?<![\w-])(?:{form_alternation(value)})(?![\w-])", scan.message, re.IGNORECASE):
                if skipped((m.start(), m.end())) or not scan.free(m.start(), m.end()):
                    continue
                if m.group(0).lower() == value.lower() and _verb_before(scan.message, m.start()):
                    continue  # "I want to watch films", "I plan to": a verb, not a category
                said.setdefault(value, []).append((m.start(), m.end()))
            if len(value) >= 4 and " " not in value:  # "smartwatch" -> watch: a compound ending in the value
                for m in re.finditer(rf"(?<![\w-])[^\W\d_]{{3,}}(?:{form_alternation(value)})(?![\w-])", scan.message, re.IGNORECASE):
                    if not skipped((m.start(), m.end())):
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
        add_constraint(scan, schema, catalog, name, values[0] if len(values) == 1 else values, spans=spans,
                       provenance=provenance, basis=basis, reason=why)


def is_product_search(message: str) -> bool:
    """A search for products ("noise cancelling headphones", "show me speakers"), not a question
    about them ("can I return earbuds...?", "my earbuds keep cutting out")."""
    if _SEARCH_VERB.search(message):
        return True
    first = re.match(r"\s*([\w']+)", message)
    return first is not None and first.group(1).lower() not in _QUESTION_START and not message.rstrip().endswith("?")
