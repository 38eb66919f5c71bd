"""`extract_filters`: the readers composed, in order, over one message."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import date

from querywise.catalog import Catalog
from querywise.checks.filters import Dropped, access_names
from querywise.conditions import Where
from querywise.config import AccessSettings, FilterSettings
from querywise.text import analysed_part
from querywise.understand.filters.comparison import SimilarityCue, read_comparison
from querywise.understand.filters.dates import read_years
from querywise.understand.filters.enums import is_product_search, read_enums
from querywise.understand.filters.fields import find_money_field, find_year_field, measured_fields
from querywise.understand.filters.infer import infer_from_entities, infer_from_mentions
from querywise.understand.filters.measures import read_measures
from querywise.understand.filters.money import DEFAULT_RATES, read_money
from querywise.understand.filters.negation import drop_implied_exclusions, read_exclusions
from querywise.understand.filters.scan import Constraint, Scan, inside
from querywise.understand.filters.semantic import text_left_for_search
from querywise.understand.filters.session_words import drop_session_words

__all__ = ["FilterExtraction", "extract_filters"]


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
    inferred ones are ever relaxed (by the executor). `rates` gives the USD value of each currency
    for fields whose `unit` is a currency.
    """
    # The readers read the first `ANALYSIS_CHARS` (all of a message within the default limits);
    # the semantic query keeps the whole message.
    scan = Scan(analysed_part(message))
    session_only = access_names(access)
    drop_session_words(scan, session_only, catalog)
    money_field, year_field = find_money_field(schema, rates), find_year_field(schema)
    mentions = catalog.mentions(scan.message) if catalog is not None else []
    compared = read_comparison(scan, schema, catalog, mentions, money_field, year_field, measured_fields(schema, rates))
    cue = compared[0] if compared else None
    read_years(scan, schema, catalog, year_field, today)
    read_measures(scan, schema, catalog, rates)  # first: 'under 6"' is no price
    read_money(scan, schema, catalog, money_field, rates, year_field)
    searching = bool(scan.found) or cue is not None or is_product_search(scan.message)
    if searching:  # before the enums: "not from Kestrel" is no wish for Kestrel ("can I use it without a watch?" excludes nothing)
        read_exclusions(scan, schema, catalog, session_only)
    before = len(scan.found)
    taken_by_names = [(m.start, m.end) for m in mentions]
    read_enums(scan, schema, catalog, session_only, skip=taken_by_names + ([cue.span] if cue else []))
    mentioned: tuple[Constraint, ...] = ()
    if not searching:  # "Can I return earbuds after opening them?" asks about earbuds; it is no search
        mentioned, scan.found[before:] = tuple(scan.found[before:]), []
    drop_implied_exclusions(scan)
    if catalog is not None and compared is not None:
        infer_from_entities(scan, schema, catalog, compared[1], compared[0].reference, comparison=True)
    if catalog is not None and any(c.provenance == "stated" for c in scan.found):
        named = [m for m in mentions if cue is None or not inside((m.start, m.end), cue.span)]
        infer_from_mentions(scan, schema, catalog, named)
    constraints = tuple(sorted(scan.found, key=lambda c: (c.spans[0][0] if c.spans else len(message), c.field)))
    return FilterExtraction(
        message=message,
        semantic_query=text_left_for_search(message, scan.removed(), fallback=cue.reference if cue else message),
        constraints=constraints,
        dropped=tuple(scan.dropped),
        mentioned=mentioned,
        similar=cue,
    )
