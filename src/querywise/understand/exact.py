"""Exact lookup: the identifiers of a message that the index holds, however they were typed.

`WS4402`, `ws-4402` and `WS 4402` are one part (`querywise.text.identifier_key`); each one the
index knows becomes a query of its own, searched only among the chunks that hold it (an exact
match on the identifier keys the index stores per chunk, inside the engine), and fused first."""

from __future__ import annotations

from collections.abc import Mapping

from querywise.conditions import Match, Where
from querywise.plan import PlanQuery
from querywise.text import CODE_TOKEN, IDENTIFIER_KEYS, PartNumbers, analysed_part, identifier_key

__all__ = ["EXACT_WEIGHT", "OTHER_CODE_WEIGHT", "exact_queries", "identifiers_in"]

#: The RRF weight of an exact lookup of a part number: a chunk that holds the part outranks one
#: that only reads like it.
EXACT_WEIGHT = 2.0
#: The weight of an exact lookup of another code the index holds (a gene or protein name, a model
#: name): searched beside the message, it must never push a passage the plain search ranked
#: higher down. Chosen on SciFact's train queries (see `bench`), 0 = not looked up.
OTHER_CODE_WEIGHT = 0.0


def identifiers_in(text: str, known: Mapping[str, str]) -> list[tuple[str, str]]:
    """(as typed, the index's spelling) of each identifier in `text` that `known` (the index's
    identifiers by `identifier_key`) holds, in reading order; a code split by one space ("WS 4402")
    counts as one.

    >>> identifiers_in("is ws 4402 or HC3471 in stock", {"WS4402": "ws-4402", "HC3471": "hc-3471"})
    [('ws 4402', 'ws-4402'), ('HC3471', 'hc-3471')]
    """
    text = analysed_part(text)
    tokens = list(CODE_TOKEN.finditer(text))
    out: list[tuple[str, str]] = []
    i = 0
    while i < len(tokens):
        t = tokens[i]
        nxt = tokens[i + 1] if i + 1 < len(tokens) else None
        if nxt is not None and text[t.end() : nxt.start()] == " ":
            pair = text[t.start() : nxt.end()]
            if (form := known.get(identifier_key(pair))) is not None:
                out.append((pair, form))
                i += 2
                continue
        word = t.group(0)
        if any(c.isdigit() for c in word) and (form := known.get(identifier_key(word))) is not None:
            out.append((word, form))
        i += 1
    return out


def exact_queries(found: list[tuple[str, str]], *, part_numbers: PartNumbers, other_weight: float = OTHER_CODE_WEIGHT) -> list[PlanQuery]:
    """One exact-lookup query per distinct identifier found (see `identifiers_in`): a part number
    at `EXACT_WEIGHT`, another code at `other_weight` (none at 0)."""
    forms = {identifier_key(form): form.upper() for _, form in found}
    out = []
    for key, form in forms.items():
        weight = EXACT_WEIGHT if part_numbers.matches(form) else other_weight
        if weight > 0:
            out.append(PlanQuery(text=form, kind="exact", weight=weight, where=Where(conditions=(Match(field=IDENTIFIER_KEYS, value=key),))))
    return out
