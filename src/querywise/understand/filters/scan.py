"""The state one extraction shares across its readers: which text is taken, the constraints found
and what was dropped. Every reader adds a candidate through `add_constraint`, which validates it."""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field
from datetime import date
from typing import Any, Literal

from querywise.catalog import Catalog
from querywise.checks.filters import Dropped, Span, check_value, format_number
from querywise.conditions import AnyOf, Condition, Match, NoneOf, describe
from querywise.config import FilterSettings
from querywise.text import SpanSet

__all__ = ["Basis", "Constraint", "Provenance", "Scan", "Within", "add_constraint", "comparison_ops", "inside"]


Provenance = Literal["stated", "inferred"]
# How a constraint was obtained. Stated: "said" (the words name it), "comparison" (a stated
# relative, "cheaper than the Knoll Mini", priced from the catalog). Inferred: "catalog" (implied
# by a product the message names), "compound" ("smartwatch" read as watch), "operator" (an amount
# without a comparison word, "for $150", read as a budget).
Basis = Literal["said", "comparison", "catalog", "compound", "operator"]


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
        """`price_usd < 200`, `category = headphones`, `released in (2024, 2025)`, `brand not in (Kestrel)`."""
        c = self.condition
        if isinstance(c, NoneOf):  # an exclusion: "brand not in (Kestrel)"
            return describe(c)
        if isinstance(c, Match):
            return f"{c.field} = {c.value}"
        if isinstance(c, AnyOf):
            return f"{c.field} in ({', '.join(map(str, c.values))})"
        ops = [("gt", ">"), ("gte", ">="), ("lt", "<"), ("lte", "<=")]
        return " and ".join(f"{c.field} {sym} {format_number(getattr(c, op))}" for op, sym in ops if getattr(c, op) is not None)


@dataclass
class Scan:
    """Mutable state of one extraction: what has been read, and which text is taken."""

    message: str
    claimed: list[Span] = field(default_factory=list)
    kept: list[Span] = field(default_factory=list)  # claimed, but stays in the semantic query
    found: list[Constraint] = field(default_factory=list)
    dropped: list[Dropped] = field(default_factory=list)
    taken: SpanSet = field(default_factory=SpanSet, repr=False)  # `claimed`, for `free` in O(log n)

    def free(self, start: int, end: int) -> bool:
        return self.taken.free(start, end)

    def claim(self, start: int, end: int, *, remove: bool = True) -> None:
        self.claimed.append((start, end))
        self.taken.add(start, end)
        if not remove:
            self.kept.append((start, end))

    def removed(self) -> list[Span]:
        kept = set(self.kept)
        return [s for s in self.claimed if s not in kept]


# The comparison words every quantity reader (prices, measures) shares, by operator; a reader adds
# its own ("cheaper than", "lighter than") through `comparison_ops`.
_COMPARISON_WORDS = {
    "lt": r"less\s+than|lower\s+than|under|below",
    "lte": r"up\s+to|at\s+most|no\s+more\s+than|not\s+more\s+than|max(?:imum)?(?:\s+of)?",
    "gt": r"more\s+than|greater\s+than|over|above",
    "gte": r"at\s+least|no\s+less\s+than|min(?:imum)?(?:\s+of)?",
}
_COMPARISON_SYMBOLS = {"lt": r"<(?!=)", "lte": r"<=|≤", "gt": r">(?!=)", "gte": r">=|≥"}


def comparison_ops(**extra: str) -> tuple[tuple[str, str], ...]:
    """(operator, regex alternation) for lt, lte, gt, gte: the shared words, a reader's `extra`
    words for an operator, then the symbols."""
    return tuple(
        (op, "|".join(p for p in (words, extra.get(op, ""), _COMPARISON_SYMBOLS[op]) if p)) for op, words in _COMPARISON_WORDS.items()
    )


def add_constraint(
    scan: Scan,
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
    condition, problems = check_value(name, schema.fields[name], spec, catalog)
    scan.dropped += [Dropped(name, spec if len(problems) == 1 else bad, why, span) for bad, why in problems]
    if condition is None:
        return None
    made = Constraint(name, condition, provenance, basis, spans, text, reason, period)
    scan.found.append(made)
    return made


def inside(inner: Span, outer: Span) -> bool:
    """Whether the span `inner` lies within `outer`."""
    return outer[0] <= inner[0] and inner[1] <= outer[1]


class Within:
    """`any(inside(span, s) for s in spans)` in O(log n): the spans sorted by start, with the
    furthest end reached by any span starting at or before each."""

    def __init__(self, spans: list[Span]) -> None:
        ordered = sorted(spans)
        self.starts = [s for s, _ in ordered]
        self.reach: list[int] = []
        for _, e in ordered:
            self.reach.append(max(e, self.reach[-1]) if self.reach else e)

    def __call__(self, span: Span) -> bool:
        k = bisect.bisect_right(self.starts, span[0]) - 1
        return k >= 0 and self.reach[k] >= span[1]
