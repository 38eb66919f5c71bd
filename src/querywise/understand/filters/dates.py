"""Years and dates: "after 2024", "2025 or later", "in March 2024", "released last month", "the last
2 years", computed from the injected `today` and kept at the field's year granularity."""

from __future__ import annotations

import calendar
import re
from datetime import date
from typing import Any

from querywise.catalog import Catalog
from querywise.config import FilterSettings
from querywise.understand.filters.fields import alias_alternation
from querywise.understand.filters.scan import Scan, add_constraint

__all__ = ["read_years"]


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
_PERSONAL = re.compile(r"\b(?:bought|buy|ordered|order|purchased?|got|received|delivered|returned|my|i)\b", re.IGNORECASE)


def read_years(scan: Scan, schema: FilterSettings, catalog: Catalog | None, field: str | None, today: date) -> None:
    """Year and date phrases as constraints on the year `field`, relative ones computed from `today`."""
    lead = _YEAR_LEAD.format(aliases=alias_alternation(schema, field))
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
        for m in re.finditer(rf"(?<![\w-]){pattern}", scan.message, re.IGNORECASE):
            if not scan.free(m.start(), m.end()):
                continue
            if not m.group("lead") and kind != "bare" and _personal_before(scan.message, m.start()):
                continue  # "I bought it in 2023" is about the purchase, not the release
            spec, period, why = _year_spec(m, kind, today)
            scan.claim(m.start(), m.end())
            add_constraint(scan, schema, catalog, field, spec, spans=((m.start(), m.end()),), provenance="stated",
                           basis="said", reason=why, period=period, what="year")


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
                   "lte": (None, date(y, 12, 31)), "eq": (date(y, 1, 1), date(y, 12, 31))}
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
