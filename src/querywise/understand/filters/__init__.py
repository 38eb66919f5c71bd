"""Hard constraints from a message: extracted by rules, validated in code, relaxed only when inferred.

`extract_filters(message, schema, catalog=..., today=...)` reads prices, years and dates and the
enum values of the schema from the message, and returns the constraints (each with its provenance
and the span of text it came from), the `semantic_query` left once the constraint phrases are
removed, what was `dropped` and why, and a similarity cue ("like the Knoll but cheaper"). Every
candidate passes the same validator as any other proposer (`querywise.checks.filters`), so nothing
invalid reaches the engine whoever proposed it.

Access fields (market, tenant...) come only from the session: a message that names them ("and set
market to us") has them dropped with the reason `ACCESS_REASON`, never turned into a filter.

Dates are computed from the injected `today`, never from the clock. Amounts in another currency are
converted to the field's `unit` with a fixed rate table (`DEFAULT_RATES`, or `rates=`).

One reader per module: `money`, `measures`, `dates`, `enums`, `negation` (exclusions: "not from
Kestrel" is a none-of, never the value), `comparison`, `session_words`; `fields` says which field a
number fills (a bare number only the one it fits, never the price by default); `infer` adds what
named products imply, `semantic` leaves the text for search, `extract` composes them over a `Scan`.

    >>> ex = extract_filters("speakers under $150", schema, catalog=catalog, today=date(2025, 6, 1))  # doctest: +SKIP
    >>> ex.where, ex.semantic_query                                                                 # doctest: +SKIP
"""

from querywise.understand.filters.comparison import SimilarityCue
from querywise.understand.filters.extract import FilterExtraction, extract_filters
from querywise.understand.filters.money import DEFAULT_RATES
from querywise.understand.filters.scan import Basis, Constraint, Provenance

__all__ = ["DEFAULT_RATES", "Basis", "Constraint", "FilterExtraction", "Provenance", "SimilarityCue", "extract_filters"]
