"""The vector engine seam: one small protocol, two real implementations.

`EdgeEngine` is Qdrant's in-process engine (qdrant-edge-py), the embedded default.
`ServerEngine` (in `server.py`) talks to a Qdrant server through qdrant-client, the path
beyond one machine. Both run dense, sparse (BM25) and fused (RRF) queries with the payload
filter executed inside the engine.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol, get_args

from querywise.conditions import AnyOf, Match, Range, Scalar, Where
from querywise.index.lexical import SparseVec

if TYPE_CHECKING:
    import qdrant_edge as qe

__all__ = ["DENSE", "SPARSE", "EdgeEngine", "Engine", "EnginePoint", "EngineQuery", "Mode"]

Mode = Literal["dense", "bm25", "hybrid"]
MODES: tuple[Mode, ...] = get_args(Mode)
DENSE, SPARSE = "dense", "bm25"
PayloadKind = Literal["keyword", "float", "bool"]  # what a payload index can be built on


@dataclass(frozen=True)
class EnginePoint:
    id: int
    dense: Sequence[float]
    sparse: SparseVec
    payload: dict[str, Any]


@dataclass(frozen=True)
class EngineQuery:
    """One search. For hybrid, each list goes `depth` deep and is fused with RRF."""

    mode: Mode
    limit: int
    dense: Sequence[float] | None = None
    sparse: SparseVec | None = None
    where: Where | None = None
    depth: int = 100
    rrf_k: int = 60
    hnsw_ef: int | None = None
    exact: bool = False
    with_payload: bool = True


@dataclass(frozen=True)
class EngineHit:
    id: int
    score: float
    payload: dict[str, Any]


class Engine(Protocol):
    def upsert(self, points: Sequence[EnginePoint]) -> None: ...
    def create_payload_index(self, field: str, kind: PayloadKind) -> None: ...
    def finish(self) -> None:
        """Build the search structures (HNSW) and make everything durable."""

    def query(self, q: EngineQuery) -> list[EngineHit]: ...
    def count(self) -> int: ...
    def close(self) -> None: ...


def _edge_match_any(values: Sequence[Scalar]) -> qe.MatchAny:
    """Qdrant matches all strings or all integers (bools count as integers), never a mix."""
    import qdrant_edge as qe

    strings = [v for v in values if isinstance(v, str)]
    if len(strings) == len(values):
        return qe.MatchAny(any=strings)
    integers = [v for v in values if isinstance(v, int)]
    if len(integers) == len(values):
        return qe.MatchAny(any=integers)
    raise TypeError(f"MatchAny takes all strings or all integers, not a mix: {list(values)!r}")


def _edge_filter(where: Where | None) -> qe.Filter | None:
    if not where:
        return None
    import qdrant_edge as qe

    must: list[qe.ConditionType] = []
    for c in where.conditions:
        if isinstance(c, Match):
            must.append(qe.FieldCondition(key=c.field, match=qe.MatchValue(c.value)))
        elif isinstance(c, AnyOf):
            must.append(qe.FieldCondition(key=c.field, match=_edge_match_any(c.values)))
        elif isinstance(c, Range):
            must.append(qe.FieldCondition(key=c.field, range=qe.RangeFloat(gt=c.gt, gte=c.gte, lt=c.lt, lte=c.lte)))
    return qe.Filter(must=must)


TIE_MARGIN = 10


def fused_limit(q: EngineQuery) -> int:
    """A few fused candidates past `limit`, so that `break_ties` sees every point tied with the
    last one kept: the engine orders equal RRF scores arbitrarily from one call to the next.
    With two lists a tie is one point at ranks (a, b) and another at (b, a), or one point only in
    each list at the same rank: groups of two, well inside the margin. (Fetching the whole fused
    list instead cost 4 ms a search on SciFact.)"""
    return q.limit + TIE_MARGIN


def break_ties(hits: list[EngineHit], limit: int) -> list[EngineHit]:
    """Equal fused scores (rank r in one list, rank r in the other) go to the earlier-indexed
    point: the same query on the same index always ranks the same."""
    return sorted(hits, key=lambda h: (-h.score, h.id))[:limit]


class EdgeEngine:
    """Qdrant's embedded engine on a folder: a named dense vector and a BM25 sparse vector."""

    def __init__(self, path: Path, shard: qe.EdgeShard) -> None:
        self.path, self._shard = path, shard

    @classmethod
    def create(cls, path: Path, *, dim: int, hnsw_m: int, hnsw_ef_construct: int) -> EdgeEngine:
        import qdrant_edge as qe

        config = qe.EdgeConfig(
            vectors={
                DENSE: qe.EdgeVectorParams(
                    size=dim,
                    distance=qe.Distance.Cosine,
                    hnsw_config=qe.HnswIndexConfig(
                        m=hnsw_m, ef_construct=hnsw_ef_construct, full_scan_threshold=10_000
                    ),
                )
            },
            sparse_vectors={SPARSE: qe.EdgeSparseVectorParams(modifier=qe.Modifier.Idf)},
            # The index is written once, then read: no WAL needed; finish() flushes.
            wal_enabled=False,
        )
        return cls(path, qe.EdgeShard.create(str(path), config))

    @classmethod
    def open(cls, path: Path) -> EdgeEngine:
        import qdrant_edge as qe

        return cls(path, qe.EdgeShard.load(str(path)))

    def upsert(self, points: Sequence[EnginePoint]) -> None:
        import qdrant_edge as qe

        self._shard.update(
            qe.UpdateOperation.upsert_points(
                [
                    qe.Point(
                        p.id,
                        {DENSE: list(map(float, p.dense)), SPARSE: qe.SparseVector(*p.sparse)},
                        p.payload,
                    )
                    for p in points
                ]
            )
        )

    def create_payload_index(self, field: str, kind: PayloadKind) -> None:
        import qdrant_edge as qe

        schema = {
            "keyword": qe.PayloadSchemaType.Keyword,
            "float": qe.PayloadSchemaType.Float,
            "bool": qe.PayloadSchemaType.Bool,
        }[kind]
        self._shard.update(qe.UpdateOperation.create_field_index(field, schema))

    def finish(self) -> None:
        self._shard.optimize()
        self._shard.flush()

    def query(self, q: EngineQuery) -> list[EngineHit]:
        import qdrant_edge as qe

        params = qe.SearchParams(hnsw_ef=q.hnsw_ef, exact=q.exact)
        flt = _edge_filter(q.where)

        def dense() -> Any:
            return qe.Query.Nearest(list(map(float, q.dense or ())), using=DENSE)

        def sparse() -> Any:
            return qe.Query.Nearest(qe.SparseVector(*(q.sparse or ([], []))), using=SPARSE)

        if q.mode == "hybrid":
            request = qe.QueryRequest(
                limit=fused_limit(q),
                prefetches=[qe.Prefetch(limit=q.depth, query=dense(), params=params, filter=flt)]
                # A query with no indexed term has no BM25 list; fusion then ranks the dense one.
                + ([qe.Prefetch(limit=q.depth, query=sparse(), filter=flt)] if q.sparse and q.sparse[0] else []),
                # Qdrant counts ranks from 0: its k = ours + 1 gives 1 / (k + rank from 1).
                query=qe.Fusion.Rrf(k=q.rrf_k + 1),  # type: ignore[arg-type]  # stub omits that Fusion.Rrf subclasses Fusion
                with_payload=q.with_payload,
            )
        elif q.mode == "bm25" and not (q.sparse and q.sparse[0]):
            return []
        else:
            request = qe.QueryRequest(
                limit=q.limit,
                query=dense() if q.mode == "dense" else sparse(),
                filter=flt,
                params=params if q.mode == "dense" else None,
                with_payload=q.with_payload,
            )
        hits = [EngineHit(int(p.id), float(p.score), dict(p.payload or {})) for p in self._shard.query(request)]
        return break_ties(hits, q.limit) if q.mode == "hybrid" else hits

    def count(self) -> int:
        return int(self._shard.info().points_count)

    def close(self) -> None:
        self._shard.close()
