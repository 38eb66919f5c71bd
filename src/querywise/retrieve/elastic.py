"""An Elasticsearch or OpenSearch index as the retriever, through the official `elasticsearch` client.

`bm25` is a `multi_match` over the configured text fields; `dense` is the search API's `knn`
section on the configured `dense_vector` field, the query embedded by the deployment's embedder
(the model the index was built with); `hybrid` runs both and fuses them with RRF here (Elastic's
own RRF retriever needs a licence some clusters lack). The plan's filters and the session's access
are translated into the query DSL (`es_filter`) and run inside the engine, in the `bool` filter of
BM25 and the `filter` of kNN, so a kNN search returns k hits that meet them.

The client is an optional extra: `pip install "querywise[elasticsearch]"`.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from querywise.conditions import AnyOf, Match, NoneOf, Range, Where
from querywise.config import RetrieverSettings
from querywise.embed import Embedder
from querywise.index import Hit, rrf
from querywise.index.engine import Mode
from querywise.retrieve.protocol import RetrieverError

if TYPE_CHECKING:
    from elasticsearch import Elasticsearch

__all__ = ["ElasticRetriever", "es_filter"]


def _clause(c: Match | AnyOf | Range) -> dict[str, Any]:
    if isinstance(c, Match):
        return {"term": {c.field: c.value}}
    if isinstance(c, AnyOf):
        return {"terms": {c.field: list(c.values)}}
    bounds = {op: v for op, v in (("gt", c.gt), ("gte", c.gte), ("lt", c.lt), ("lte", c.lte)) if v is not None}
    return {"range": {c.field: bounds}}


def _missing(field: str) -> dict[str, Any]:
    return {"bool": {"must_not": [{"exists": {"field": field}}]}}


def es_filter(where: Where | None) -> list[dict[str, Any]]:
    """`where` as the clauses of a `bool` filter (all must hold), with the semantics of
    `Where.matches`: a payload without a field passes a `missing = "keep"` condition, or one
    whose `linked` catalog entries pass it (see `conditions._without_field`)."""
    out: list[dict[str, Any]] = []
    for c in where.conditions if where else ():
        if isinstance(c, NoneOf):
            out.append({"bool": {"must_not": [{"terms": {c.field: list(c.values)}}]}})
            continue
        if c.missing == "drop" and c.linked is None:
            out.append(_clause(c))
            continue
        should: list[dict[str, Any]] = [_clause(c)]
        if c.linked is not None and c.linked.values:
            should.append({"bool": {"filter": [_missing(c.field), {"terms": {c.linked.field: list(c.linked.values)}}]}})
        if c.missing == "keep":
            should.append({"bool": {"filter": [_missing(c.field)] + ([_missing(c.linked.field)] if c.linked is not None else [])}})
        out.append({"bool": {"should": should, "minimum_should_match": 1}})
    return out


class ElasticRetriever:
    filters_inside = True

    def __init__(self, settings: RetrieverSettings, embedder: Embedder | None, *, client: Elasticsearch | None = None) -> None:
        e = settings.elasticsearch
        if not e.index:
            raise ValueError("[retriever] kind = 'elasticsearch' needs [retriever.elasticsearch] index")
        self.settings, self.embedder = settings, embedder
        if client is None:
            try:
                from elasticsearch import Elasticsearch
            except ImportError as exc:
                raise ValueError('the Elasticsearch retriever needs the official client: pip install "querywise[elasticsearch]"') from exc
            key = os.environ.get(e.api_key_env) if e.api_key_env else None
            client = Elasticsearch(e.url, api_key=key, request_timeout=settings.timeout_s)
        self.client = client
        self.name = f"Elasticsearch index {e.index!r} at {e.url}"

    def _search(self, **body: Any) -> list[dict[str, Any]]:
        e = self.settings.elasticsearch
        try:
            answer = self.client.search(index=e.index, **body)
        except Exception as exc:  # the client's errors (transport, API, serialisation): one clear message
            raise RetrieverError(f"{self.name}: {type(exc).__name__}: {exc}") from exc
        rows = answer.get("hits", {}).get("hits")
        if not isinstance(rows, list):
            raise RetrieverError(f"{self.name}: the answer has no hits.hits")
        return rows

    def _hit(self, row: dict[str, Any], rank: int, score: float | None = None) -> Hit:
        e = self.settings.elasticsearch
        source = dict(row.get("_source") or {})
        ident = source.get(e.id_field) if e.id_field else row.get("_id")
        text = " ".join(str(source[f]) for f in e.text_fields if source.get(f))
        return Hit(id=str(ident if ident is not None else row.get("_id")), score=float(row.get("_score") or 0.0) if score is None else score,
                   rank=rank, text=text, title=str(source.get(e.title_field) or "") if e.title_field else "", payload=source)

    def retrieve(self, text: str, *, k: int, where: Where | None = None, mode: Mode = "hybrid") -> list[Hit]:
        e = self.settings.elasticsearch
        flt = es_filter(where)
        lists: list[list[dict[str, Any]]] = []
        if mode != "dense" or not e.vector_field:
            lists.append(self._search(size=k, query={"bool": {"must": [{"multi_match": {"query": text, "fields": list(e.text_fields)}}], "filter": flt}}))
        if mode != "bm25" and e.vector_field:
            if self.embedder is None:
                raise ValueError(f"{self.name}: a dense search needs the deployment's embedder")
            vector = [float(x) for x in self.embedder.embed([text])[0]]
            knn: dict[str, Any] = {"field": e.vector_field, "query_vector": vector, "k": k, "num_candidates": max(k * 10, 100)}
            if flt:
                knn["filter"] = flt
            lists.append(self._search(size=k, knn=knn))
        if len(lists) == 1:
            return [self._hit(row, rank) for rank, row in enumerate(lists[0], start=1)]
        first: dict[str, dict[str, Any]] = {}
        for rows in lists:
            for row in rows:
                first.setdefault(str(row.get("_id")), row)
        fused = rrf([[str(r.get("_id")) for r in rows] for rows in lists])
        return [self._hit(first[i], rank, score) for rank, (i, score) in enumerate(fused[:k], start=1)]

    def close(self) -> None:
        self.client.close()
