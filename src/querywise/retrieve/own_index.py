"""The querywise index as a retriever: filters and access run inside its engine, exact lookups
filter on its identifier keys, and an empty result is explained (`explain_empty`)."""

from __future__ import annotations

from collections.abc import Sequence

from querywise.conditions import Where, describe
from querywise.index import Hit, Index
from querywise.index.engine import Mode

__all__ = ["IndexRetriever", "explain_empty"]


class IndexRetriever:
    """`Index.search` behind the `Retriever` protocol."""

    filters_inside = True
    identifier_keys = True
    dense_cosines = True

    def __init__(self, index: Index) -> None:
        self.index = index
        self.name = f"querywise index {index.root}"
        self.rrf_k = index.settings.index.rrf_k

    def retrieve(self, text: str, *, k: int, where: Where | None = None, mode: Mode = "hybrid") -> list[Hit]:
        return self.index.search(text, mode=mode, k=k, where=where or None)

    def explain_empty(self, queries: Sequence[tuple[str, Mode]], *, filters: Where | None = None, access: Where | None = None) -> list[str]:
        return explain_empty(self.index, queries, filters=filters, access=access)


def explain_empty(
    index: Index,
    queries: Sequence[tuple[str, Mode]],
    *,
    filters: Where | None = None,
    access: Where | None = None,
    name_fields: bool = False,
) -> list[str]:
    """Why searching `queries` (text, mode) with `filters` AND `access` found nothing, the most
    basic cause first: a field no chunk carries (access, then filters); no chunk this session's
    access lets it see; a stated filter that keeps no such chunk on its own, or the filters
    together; else the query text, which matched nothing they keep (BM25 finds only chunks that
    share a word with it). Access is named by its field, never by the session's value.
    `name_fields`: also list the fields the chunks do carry (for whoever configures the index).

    Costs a few one-result searches, made only once a search came back empty.
    """
    filters, access = filters or Where(), access or Where()
    presence = index.field_presence()
    carried = f" (fields: {presence.listing()})" if name_fields else ""
    absent_access = [c.field for c in access.conditions if not presence.carries(c.field)]
    if absent_access:
        return [f"no chunk of the index carries the access field {f!r}{carried}" for f in dict.fromkeys(absent_access)]
    absent = [c for c in filters.conditions if not presence.carries(c.field)]
    if absent:
        return [f"no chunk carries the field {c.field!r}{carried}, so {describe(c)} matches nothing" for c in absent]
    if access and not _matches_any(index, access):
        return [f"no chunk matches this session's access ({', '.join(dict.fromkeys(c.field for c in access.conditions))})"]
    # Which stated constraint, on its own, leaves nothing? (Access is never questioned.)
    culprits = [describe(c) for c in filters.conditions if not _matches_any(index, Where(conditions=(c,)) & access)]
    if culprits:
        return culprits
    if filters and not _matches_any(index, filters & access):
        return ["the combination " + " and ".join(describe(c) for c in filters.conditions)]
    kept = " among the chunks the filters keep" if filters else " among the chunks this session may see" if access else ""
    bm25 = " (BM25: none of its words is in them)" if all(m == "bm25" for _, m in queries) else ""
    return [f"the index returned nothing for the query text{kept}{bm25}"]


def _matches_any(index: Index, where: Where) -> bool:
    """Whether any chunk meets `where`: a dense search with a fixed vector returns a chunk whenever
    one is left to rank (no model runs); an empty approximate answer is confirmed exactly."""
    probe = [1.0] + [0.0] * (index.manifest.dim - 1)
    return bool(index.query(mode="dense", k=1, dense=probe, where=where) or index.query(mode="dense", k=1, dense=probe, where=where, exact=True))

