"""The same engine seam on a Qdrant server (qdrant-client), for corpora beyond one machine.

Differences from the embedded engine, stated once:
- A build writes a fresh collection and then moves an alias onto it in one call, so readers
  switch atomically; the previous collection is dropped afterwards.
- `QdrantClient(":memory:")` (local mode) is a pure-Python exact scan. It exercises this code
  path in tests and nothing more: never use it as an embedded engine.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from querywise.conditions import AnyOf, Match, Range, Where
from querywise.index.engine import DENSE, SPARSE, EngineHit, EnginePoint, EngineQuery, PayloadKind, break_ties, fused_limit

if TYPE_CHECKING:  # imported at run time only when a server is used
    from qdrant_client import QdrantClient

__all__ = ["ServerEngine", "connect"]


def connect(url: str) -> QdrantClient:
    """A QdrantClient for `url` (":memory:" for the local test double); key from QDRANT_API_KEY."""
    import os

    from qdrant_client import QdrantClient

    if url == ":memory:":
        return QdrantClient(":memory:")
    return QdrantClient(url=url, api_key=os.environ.get("QDRANT_API_KEY"))


def _filter(where: Where | None) -> Any:
    if not where:
        return None
    from qdrant_client import models as m

    must: list[Any] = []
    for c in where.conditions:
        if isinstance(c, Match):
            must.append(m.FieldCondition(key=c.field, match=m.MatchValue(value=c.value)))
        elif isinstance(c, AnyOf):
            must.append(m.FieldCondition(key=c.field, match=m.MatchAny(any=list(c.values))))
        elif isinstance(c, Range):
            must.append(m.FieldCondition(key=c.field, range=m.Range(gt=c.gt, gte=c.gte, lt=c.lt, lte=c.lte)))
    return m.Filter(must=must)


class ServerEngine:
    """One collection (reached through its alias) on a Qdrant server."""

    def __init__(self, client: QdrantClient, collection: str, alias: str | None = None) -> None:
        self.client, self.collection, self.alias = client, collection, alias

    @classmethod
    def create(
        cls, client: QdrantClient, alias: str, build_id: str, *, dim: int, hnsw_m: int, hnsw_ef_construct: int
    ) -> ServerEngine:
        from qdrant_client import models as m

        name = f"{alias}-{build_id}"
        client.create_collection(
            name,
            vectors_config={
                DENSE: m.VectorParams(
                    size=dim,
                    distance=m.Distance.COSINE,
                    hnsw_config=m.HnswConfigDiff(m=hnsw_m, ef_construct=hnsw_ef_construct),
                )
            },
            sparse_vectors_config={SPARSE: m.SparseVectorParams(modifier=m.Modifier.IDF)},
        )
        return cls(client, name, alias)

    @classmethod
    def open(cls, client: QdrantClient, alias: str) -> ServerEngine:
        return cls(client, alias)

    def upsert(self, points: Sequence[EnginePoint]) -> None:
        from qdrant_client import models as m

        self.client.upsert(
            self.collection,
            [
                m.PointStruct(
                    id=p.id,
                    vector={
                        DENSE: list(map(float, p.dense)),
                        SPARSE: m.SparseVector(indices=p.sparse[0], values=p.sparse[1]),
                    },
                    payload=p.payload,
                )
                for p in points
            ],
            wait=True,
        )

    def create_payload_index(self, field: str, kind: PayloadKind) -> None:
        from qdrant_client import models as m

        schema = {"keyword": m.PayloadSchemaType.KEYWORD, "float": m.PayloadSchemaType.FLOAT, "bool": m.PayloadSchemaType.BOOL}
        self.client.create_payload_index(self.collection, field, schema[kind], wait=True)

    def finish(self) -> None:
        """Point the alias at the new collection in one call, then drop the old one."""
        from qdrant_client import models as m

        if self.alias is None:
            return
        old = [a.collection_name for a in self.client.get_aliases().aliases if a.alias_name == self.alias]
        ops: list[Any] = [m.DeleteAliasOperation(delete_alias=m.DeleteAlias(alias_name=self.alias))] if old else []
        ops.append(m.CreateAliasOperation(create_alias=m.CreateAlias(collection_name=self.collection, alias_name=self.alias)))
        self.client.update_collection_aliases(change_aliases_operations=ops)
        for name in old:
            if name != self.collection:
                self.client.delete_collection(name)

    def query(self, q: EngineQuery) -> list[EngineHit]:
        from qdrant_client import models as m

        params = m.SearchParams(hnsw_ef=q.hnsw_ef, exact=q.exact)
        flt = _filter(q.where)
        has_sparse = bool(q.sparse and q.sparse[0])
        sparse = m.SparseVector(indices=q.sparse[0], values=q.sparse[1]) if has_sparse and q.sparse else None
        if q.mode == "hybrid":
            prefetch = [m.Prefetch(query=list(q.dense or ()), using=DENSE, limit=q.depth, filter=flt, params=params)]
            if sparse is not None:
                prefetch.append(m.Prefetch(query=sparse, using=SPARSE, limit=q.depth, filter=flt))
            res = self.client.query_points(
                self.collection, prefetch=prefetch, query=m.RrfQuery(rrf=m.Rrf(k=q.rrf_k + 1)),
                limit=fused_limit(q), with_payload=q.with_payload,
            )
            return break_ties([EngineHit(int(p.id), float(p.score), dict(p.payload or {})) for p in res.points], q.limit)
        if q.mode == "bm25":
            if sparse is None:
                return []
            res = self.client.query_points(
                self.collection, query=sparse, using=SPARSE, query_filter=flt, limit=q.limit, with_payload=q.with_payload
            )
        else:
            res = self.client.query_points(
                self.collection, query=list(q.dense or ()), using=DENSE, query_filter=flt,
                search_params=params, limit=q.limit, with_payload=q.with_payload,
            )
        return [EngineHit(int(p.id), float(p.score), dict(p.payload or {})) for p in res.points]

    def count(self) -> int:
        return int(self.client.count(self.collection, exact=True).count)

    def close(self) -> None:
        """The client is the caller's; nothing to release here."""
