"""Prices: amounts with or without a currency, comparison words, ranges and budgets, converted to
the price field's unit (a currency, or its minor unit: "usd_cents") with a fixed rate table."""

from __future__ import annotations

import re
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from querywise.catalog import Catalog
from querywise.checks.filters import Dropped, format_number
from querywise.config import FilterSettings
from querywise.understand.filters.fields import alias_alternation, bare_number_field
from querywise.understand.filters.scan import Basis, Provenance, Scan, add_constraint, comparison_ops
from querywise.understand.filters.units import convert, currency_of

__all__ = ["AFTER_BARE", "DEFAULT_RATES", "read_money"]


# USD value of one unit of each currency: fixed round figures close to the 2024 averages, not live
# rates. A deployment that needs other or exact rates passes its own table as `rates=`. Yen amounts
# are recognised but have no rate here, so they are dropped with a reason unless the table has "jpy".
DEFAULT_RATES: Mapping[str, float] = MappingProxyType({"usd": 1.0, "eur": 1.08, "gbp": 1.27})


_CURRENCY = {
    "$": "usd", "us$": "usd", "usd": "usd", "dollar": "usd", "dollars": "usd", "buck": "usd", "bucks": "usd",
    "€": "eur", "eur": "eur", "euro": "eur", "euros": "eur",
    "£": "gbp", "gbp": "gbp", "pound": "gbp", "pounds": "gbp", "quid": "gbp",
    "¥": "jpy", "jpy": "jpy", "yen": "jpy",
}
# Digit runs are possessive: giving digits back leaves a digit next, which `(?![\d,]*\d)` after
# the number rejects anyway; backtracking them cost O(n) lookahead scans each, quadratic on a
# long run of digits (100,000 digits: minutes). Only the decimals may be given up whole.
_NUM = r"\d{1,3}+(?:,\d{3})++(?:\.\d++)?|\d++(?:\.\d++)?"
_NEXT_WORD = re.compile(r"\s*([^\W\d_]+|%)")


def _amount(tag: str) -> str:
    """An amount with an optional currency before or after: $150, 150 bucks, €180, 180 euros."""
    return (
        rf"(?:(?P<{tag}pre>us\$|[$€£¥]|\b(?:usd|eur|gbp|jpy)\b)\s?)?"
        rf"(?<![\w.,-])(?P<{tag}num>{_NUM})(?![\d,]*\d)"
        rf"(?:\s?(?P<{tag}post>dollars?|bucks?|usd|euros?|eur|pounds?|gbp|quid|yen|jpy|[€$£¥])(?![a-z]))?"
        rf"(?![\w-])"
    )


_MONEY_OPS = comparison_ops(lt=r"cheaper\s+than|beneath", gt=r"higher\s+than", gte=r"starting\s+(?:at|from)|from")
_MONEY_LEAD = r"(?:(?:that|which)\s+)?(?:(?:is|are|costs?|costing|priced(?:\s+at)?|prices?|sells?\s+for|for|{aliases})\s+)?"
# Words that may follow a bare number (no currency) for it to still read as an amount.
AFTER_BARE = {"and", "or", "but", "with", "that", "which", "for", "in", "on", "please", "released", "launched",
              "from", "since", "after", "before", "total", "tops", "each", "max", "only"}


def read_money(
    scan: Scan, schema: FilterSettings, catalog: Catalog | None, field: str | None, rates: Mapping[str, float], year_field: str | None = None
) -> None:
    """Price phrases as constraints on `field`, amounts converted to its unit with `rates`. A number
    with no currency and no money word ("under 150") is a price only when the price is the one
    field it fits (`bare_number_field`); it is read in the field's currency, never in its minor unit
    (150 is $150, not 150 cents); on another field it is read in that field's unit; when no field
    can be told it stays in the query, and `dropped` says why."""
    lead = _MONEY_LEAD.format(aliases=alias_alternation(schema, field))
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

    def in_unit(name: str, x: float) -> float:  # a price said bare is in the field's currency (its cents: x 100)
        unit = schema.fields[name].unit
        return (_bare_in(x, unit, rates)[0] or x) if name == field and unit else x

    for pattern, kind in readers:
        for m in re.finditer(rf"(?<![\w-]){pattern}", scan.message, re.IGNORECASE):
            if not scan.free(m.start(), m.end()):
                continue
            g = m.groupdict()
            currency = _currency(g, "a") or _currency(g, "b")
            if currency is None and kind in ("bare", "dash"):
                continue  # "for 2", "2023-2025": an amount needs its currency here
            if currency is None and kind != "budget" and not _bare_ok(scan.message, m.end()):
                continue  # a number with no currency and a noun after it ("over 30 hours") is not a price
            amounts = [_parse(g["anum"])] + ([_parse(g["bnum"])] if g.get("bnum") else [])
            span = (m.start(), m.end())
            target, why_field = field, ""
            if currency is None and kind != "budget" and not _money_lead(g.get("lead") or "", schema, field):
                target, why_field = bare_number_field(scan.message, _money_spec(kind, g, amounts)[0], schema, catalog, field, year_field,
                                                      in_unit=in_unit)
                if target is None:
                    scan.dropped.append(Dropped("number", scan.message[span[0] : span[1]], why_field, span))
                    continue
                if target != field:  # another numeric field: the number is in its unit
                    scan.claim(*span)
                    spec, _, _, why = _money_spec(kind, g, amounts)
                    unit = schema.fields[target].unit
                    add_constraint(scan, schema, catalog, target, spec, spans=(span,), provenance="stated", basis="said",
                                   reason=f"{why} ({why_field}; no unit given: read as {unit or 'the stored value'})", what="number")
                    continue
            unit = field and schema.fields[field].unit
            converted = [_convert(a, currency, unit, rates) if currency is not None or not unit else _bare_in(a, unit, rates) for a in amounts]
            scan.claim(*span)
            failed = next((why for value, why in converted if value is None), None)
            if failed is not None:
                scan.dropped.append(Dropped(field or "price", scan.message[span[0] : span[1]], failed, span))
                continue
            values = [v for v, _ in converted if v is not None]  # all of them: none failed
            notes = "; ".join([why_field] * bool(why_field) + [why for _, why in converted if why])
            spec, provenance, basis, why = _money_spec(kind, g, values)
            add_constraint(scan, schema, catalog, field, spec, spans=(span,), provenance=provenance, basis=basis,
                           reason=why + (f" ({notes})" if notes else ""), what="price")


def _money_spec(kind: str, g: dict[str, Any], values: list[float]) -> tuple[Any, Provenance, Basis, str]:
    if kind in ("range", "dash"):
        low, high = sorted(values)
        return {"gte": low, "lte": high}, "stated", "said", f"between {format_number(low)} and {format_number(high)}, both included"
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
    return {"gte": round(v * 0.9, 2), "lte": round(v * 1.1, 2)}, "inferred", "operator", f"{word} {format_number(v)} read as +/-10%"


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
    if currency not in rates or currency_of(unit, rates) is None:
        return None, f"cannot convert {currency} to {unit}: no rate in the table"
    value, note = convert(amount, currency, unit, rates)  # pint: rates and minor units ("usd_cents")
    return (round(value, 2) if value is not None else None), note


def _bare_in(amount: float, unit: str, rates: Mapping[str, float]) -> tuple[float | None, str]:
    """A price said without a currency, in the field's unit: read in the field's own currency (a
    field in cents takes "150" as 150 dollars: nobody says a price in cents)."""
    major = currency_of(unit, rates)
    if major is None:
        return amount, f"no currency given: read as {unit}"
    value, note = _convert(amount, major, unit, rates)
    return value, f"no currency given: read as {major}" + (f"; {note}" if note else "")


def _money_lead(lead: str, schema: FilterSettings, field: str | None) -> bool:
    """The words before the amount say it is a price ("costs", "priced at", "price", an alias)."""
    words = {"cost", "costs", "costing", "priced", "price", "prices", "sells", "sell"}
    words |= {a.lower() for a in (schema.fields[field].aliases if field else [])}
    return any(w.lower() in words for w in re.findall(r"[\w']+", lead))


def _bare_ok(message: str, end: int) -> bool:
    """A number without currency is read as an amount only if what follows is not a noun of its own."""
    nxt = _NEXT_WORD.match(message, end)
    return nxt is None or nxt.group(1).lower() in AFTER_BARE
