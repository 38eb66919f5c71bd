"""The same engine seam on a Qdrant server (qdrant-client), for corpora beyond one machine.

Differences from the embedded engine, stated once:
- A build writes a fresh collection (`<alias>-<build id>`) and then moves an alias onto it in one
  call, for other clients. An opened index reads its own build's collection by name, never the
  alias: a rebuild cannot move it onto another build's points while it holds that build's
  lexicon. A collection is dropped with its build folder (`[index] keep_builds`, see builds.py).
- `QdrantClient(":memory:")` (local mode) is a pure-Python exact scan. It exercises this code
  path in tests and nothing more: never use it as an embedded engine.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from querywise.conditions import AnyOf, Match, NoneOf, Range, Where
from querywise.index.engine import DENSE, SENTENCES, SPARSE, EngineHit, EnginePoint, EngineQuery, PayloadKind, Scored, _floats, run_query

if TYPE_CHECKING:  # imported at run time only when a server is used
    from qdrant_client import QdrantClient

__all__ = ["ServerEngine", "collection_of", "connect", "drop_collection", "point_alias", "qdrant_filter"]


def connect(url: str) -> QdrantClient:
    """A QdrantClient for `url` (":memory:" for the local test double); key from QDRANT_API_KEY."""
    import os

    from qdrant_client import QdrantClient

    if url == ":memory:":
        return QdrantClient(":memory:")
    return QdrantClient(url=url, api_key=os.environ.get("QDRANT_API_KEY"))


def collection_of(alias: str, build_id: str) -> str:
    """The collection that holds build `build_id` of the index behind `alias`."""
    return f"{alias}-{build_id}"


def point_alias(client: QdrantClient, alias: str, collection: str) -> None:
    """Move `alias` onto `collection` in one call (readers through the alias switch atomically)."""
    from qdrant_client import models as m

    old = [a.collection_name for a in client.get_aliases().aliases if a.alias_name == alias]
    ops: list[Any] = [m.DeleteAliasOperation(delete_alias=m.DeleteAlias(alias_name=alias))] if old else []
    ops.append(m.CreateAliasOperation(create_alias=m.CreateAlias(collection_name=collection, alias_name=alias)))
    client.update_collection_aliases(change_aliases_operations=ops)


def drop_collection(client: QdrantClient, collection: str) -> None:
    """Delete `collection` if it exists (a build folder removed, its points go with it)."""
    if client.collection_exists(collection):
        client.delete_collection(collection)


def qdrant_filter(where: Where | None) -> Any:
    """`where` as a qdrant-client `Filter` (None for no condition), with `Where.matches`' semantics."""
    if not where:
        return None
    from qdrant_client import models as m

    def field(c: Match | AnyOf | Range) -> Any:
        if isinstance(c, Match):
            return m.FieldCondition(key=c.field, match=m.MatchValue(value=c.value))
        if isinstance(c, AnyOf):
            return m.FieldCondition(key=c.field, match=m.MatchAny(any=list(c.values)))
        return m.FieldCondition(key=c.field, range=m.Range(gt=c.gt, gte=c.gte, lt=c.lt, lte=c.lte))

    def empty(key: str) -> Any:
        return m.IsEmptyCondition(is_empty=m.PayloadField(key=key))

    must: list[Any] = []
    for c in where.conditions:
        if isinstance(c, NoneOf):
            must.append(m.Filter(must_not=[m.FieldCondition(key=c.field, match=m.MatchAny(any=list(c.values)))]))
            continue
        if c.missing == "drop" and c.linked is None:
            must.append(field(c))
            continue
        # A payload without the field: see conditions._without_field.
        should = [field(c)]
        if c.linked is not None and c.linked.values:
            linked = m.FieldCondition(key=c.linked.field, match=m.MatchAny(any=list(c.linked.values)))
            should.append(m.Filter(must=[empty(c.field), linked]))
        if c.missing == "keep":
            should.append(m.Filter(must=[empty(c.field)] + ([empty(c.linked.field)] if c.linked is not None else [])))
        must.append(m.Filter(should=should))
    return m.Filter(must=must)


class ServerEngine:
    """One collection (reached through its alias) on a Qdrant server."""

    def __init__(self, client: QdrantClient, collection: str, alias: str | None = None) -> None:
        self.client, self.collection, self.alias = client, collection, alias

    @classmethod
    def create(
        cls, client: QdrantClient, alias: str, build_id: str, *, dim: int, hnsw_m: int, hnsw_ef_construct: int,
        shards: int | None = None, replicas: int | None = None, payload_graphs: bool = True, sentences: bool = False,
    ) -> ServerEngine:
        from qdrant_client import models as m

        name = collection_of(alias, build_id)
        hnsw = m.HnswConfigDiff(m=hnsw_m, ef_construct=hnsw_ef_construct, payload_m=None if payload_graphs else 0)
        vectors = {DENSE: m.VectorParams(size=dim, distance=m.Distance.COSINE, hnsw_config=hnsw)}
        if sentences:  # as the embedded engine: MaxSim over cosines, a chunk scored by its best sentence
            vectors[SENTENCES] = m.VectorParams(size=dim, distance=m.Distance.COSINE, hnsw_config=hnsw,
                                                multivector_config=m.MultiVectorConfig(comparator=m.MultiVectorComparator.MAX_SIM))
        client.create_collection(
            name,
            shard_number=shards,
            replication_factor=replicas,
            vectors_config=vectors,
            sparse_vectors_config={SPARSE: m.SparseVectorParams(modifier=m.Modifier.IDF)},
        )
        return cls(client, name, alias)

    @classmethod
    def open(cls, client: QdrantClient, collection: str) -> ServerEngine:
        """Read `collection` (a build's own, from `collection_of`)."""
        return cls(client, collection)

    def upsert(self, points: Sequence[EnginePoint]) -> None:
        from qdrant_client import models as m

        self.client.upsert(
            self.collection,
            [
                m.PointStruct(
                    id=p.id,
                    vector={
                        DENSE: _floats(p.dense),
                        SPARSE: m.SparseVector(indices=p.sparse[0], values=p.sparse[1]),
                        **({SENTENCES: [_floats(v) for v in p.sentences]} if p.sentences is not None and len(p.sentences) else {}),
                    },
                    payload=p.payload,
                )
                for p in points
            ],
            wait=True,
        )

    def create_payload_index(self, field: str, kind: PayloadKind, *, graph: bool) -> None:
        from qdrant_client import models as m

        schema: m.KeywordIndexParams | m.FloatIndexParams | m.BoolIndexParams
        if kind == "keyword":
            schema = m.KeywordIndexParams(type=m.KeywordIndexType.KEYWORD, enable_hnsw=graph)
        elif kind == "float":
            schema = m.FloatIndexParams(type=m.FloatIndexType.FLOAT, enable_hnsw=graph)
        else:
            schema = m.BoolIndexParams(type=m.BoolIndexType.BOOL, enable_hnsw=graph)
        self.client.create_payload_index(self.collection, field, schema, wait=True)

    def finish(self) -> None:
        """Point the alias at the new collection in one call. The previous collection stays: it
        belongs to the previous build, which readers may hold and `--rollback` may bring back."""
        if self.alias is not None:
            point_alias(self.client, self.alias, self.collection)

    def query(self, q: EngineQuery) -> list[EngineHit]:
        from qdrant_client import models as m

        acorn = m.AcornSearchParams(enable=True) if q.acorn and q.where else None
        params = m.SearchParams(hnsw_ef=q.hnsw_ef, exact=q.exact, acorn=acorn)
        flt = qdrant_filter(q.where)

        def search(kind: str, n: int) -> m.QueryRequest:
            if kind == "sentences":  # the query as a one-vector multivector: MaxSim is its best sentence's cosine
                return m.QueryRequest(query=[list(q.dense or ())], using=SENTENCES, filter=flt, params=params, limit=n, with_payload=False)
            if kind == "dense":
                return m.QueryRequest(query=list(q.dense or ()), using=DENSE, filter=flt, params=params, limit=n, with_payload=False)
            indices, values = q.sparse or ([], [])
            return m.QueryRequest(query=m.SparseVector(indices=list(indices), values=list(values)), using=SPARSE, filter=flt, limit=n, with_payload=False)

        def batch(requests: list[m.QueryRequest]) -> list[list[Scored]]:
            answers = self.client.query_batch_points(self.collection, requests=requests)
            return [[(int(p.id), float(p.score)) for p in a.points] for a in answers]

        def payloads(ids: list[int]) -> dict[int, dict[str, Any]]:
            return {int(r.id): dict(r.payload or {}) for r in self.client.retrieve(self.collection, ids, with_payload=True)}

        return run_query(q, search, batch, payloads)

    def count(self) -> int:
        return int(self.client.count(self.collection, exact=True).count)

    def close(self) -> None:
        """The client is the caller's; nothing to release here."""
