"""The vector engine seam: one small protocol, two real implementations.

`EdgeEngine` is Qdrant's in-process engine (qdrant-edge-py), the embedded default.
`ServerEngine` (in `server.py`) talks to a Qdrant server through qdrant-client, the path
beyond one machine. Both run dense, sparse (BM25) and fused (RRF) queries with the payload
filter executed inside the engine, and either can keep each chunk's sentence vectors (a
multivector scored by its best sentence) as a third list for hybrid.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from operator import itemgetter
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol, get_args

from querywise.conditions import AnyOf, Match, NoneOf, Range, Scalar, Where
from querywise.index.fusion import Fusion, fuse_scored
from querywise.index.lexical import SparseVec

if TYPE_CHECKING:
    import qdrant_edge as qe

__all__ = ["DENSE", "SENTENCES", "SPARSE", "EdgeEngine", "Engine", "EnginePoint", "EngineQuery", "Mode", "Scored", "fuse", "run_query", "tie_complete"]

Mode = Literal["dense", "bm25", "hybrid"]
MODES: tuple[Mode, ...] = get_args(Mode)
DENSE, SPARSE, SENTENCES = "dense", "bm25", "sentences"
ListKind = Literal["dense", "sentences", "bm25"]  # the ranked lists a query can need
PayloadKind = Literal["keyword", "float", "bool"]  # what a payload index can be built on


@dataclass(frozen=True)
class EnginePoint:
    id: int
    dense: Sequence[float]
    sparse: SparseVec
    payload: dict[str, Any]
    sentences: Sequence[Sequence[float]] | None = None  # one vector per sentence, for an index that keeps them


@dataclass(frozen=True)
class EngineQuery:
    """One search. For hybrid, each list goes `depth` deep and is fused with RRF."""

    mode: Mode | Literal["sentences"]  # "sentences": the best-sentence list alone (for tuning the fusion)
    limit: int
    dense: Sequence[float] | None = None
    sparse: SparseVec | None = None
    where: Where | None = None
    depth: int = 100
    rrf_k: int = 60
    fusion: Fusion = "rrf"
    dense_weight: float = 0.5  # the dense list's share of the fusion (see index.fusion.fuse_scored)
    sentences: bool = False  # the index keeps sentence vectors: hybrid fuses their list too
    sentence_share: float = 0.5  # that list's part of the dense side's weight
    hnsw_ef: int | None = None
    exact: bool = False
    acorn: bool = False  # a filtered dense search walks the graph with ACORN (two hops past filtered-out points)
    with_payload: bool = True


@dataclass(frozen=True)
class EngineHit:
    id: int
    score: float
    payload: dict[str, Any]


class Engine(Protocol):
    def upsert(self, points: Sequence[EnginePoint]) -> None: ...
    def create_payload_index(self, field: str, kind: PayloadKind, *, graph: bool) -> None:
        """`graph`: the field's values get their own graph links (when the build makes any)."""

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

    def field(c: Match | AnyOf | Range) -> qe.FieldCondition:
        if isinstance(c, Match):
            return qe.FieldCondition(key=c.field, match=qe.MatchValue(c.value))
        if isinstance(c, AnyOf):
            return qe.FieldCondition(key=c.field, match=_edge_match_any(c.values))
        return qe.FieldCondition(key=c.field, range=qe.RangeFloat(gt=c.gt, gte=c.gte, lt=c.lt, lte=c.lte))

    must: list[qe.ConditionType] = []
    for c in where.conditions:
        if isinstance(c, NoneOf):
            must.append(qe.Filter(must_not=[qe.FieldCondition(key=c.field, match=_edge_match_any(c.values))]))
            continue
        if c.missing == "drop" and c.linked is None:
            must.append(field(c))
            continue
        # A payload without the field: see conditions._without_field.
        should: list[qe.ConditionType] = [field(c)]
        if c.linked is not None and c.linked.values:
            linked = qe.FieldCondition(key=c.linked.field, match=_edge_match_any(c.linked.values))
            should.append(qe.Filter(must=[qe.IsEmptyCondition(key=c.field), linked]))
        if c.missing == "keep":
            empty: list[qe.ConditionType] = [qe.IsEmptyCondition(key=c.field)]
            empty += [qe.IsEmptyCondition(key=c.linked.field)] if c.linked is not None else []
            should.append(qe.Filter(must=empty))
        must.append(qe.Filter(should=should))
    return qe.Filter(must=must)


TIE_MARGIN = 10

# A ranked list's point: (point id, score). A hybrid search ranks two lists of 110 points or more
# and keeps 100, so the lists stay plain pairs: an EngineHit (a frozen dataclass, ~1 us to make)
# for each listed point cost more than the fusion itself (cProfile of SciFact's hybrid searches).
Scored = tuple[int, float]
# What one ranked list asks for: (which list, how many hits); the engine answers each in order.
Fetch = Callable[[Sequence[tuple[int, int]]], list[list[Scored]]]


_ID, _SCORE = itemgetter(0), itemgetter(1)


def _ranked(hits: Sequence[Scored]) -> list[Scored]:
    """`hits` by score, highest first, equal scores in point-id order: sorted by id, then stably
    by score (two sorts on C keys take half the time of one on a (-score, id) tuple made per hit)."""
    ranked = sorted(hits, key=_ID)
    ranked.sort(key=_SCORE, reverse=True)  # reverse keeps equal items in their order: stable
    return ranked


def tie_complete(fetch: Fetch, limits: Sequence[int]) -> list[list[Scored]]:
    """Each list's first `limits[i]` hits by score, equal scores in point-id order.

    An engine orders equal scores arbitrarily (by where a point sits in a segment, which a
    rebuild changes), so a list is fetched `TIE_MARGIN` past its cut and fetched again, twice as
    deep, while its last hit still ties the hit at the cut: the whole tied group is then known and
    the cut keeps its lowest ids. The same query on the same corpus ranks the same, rebuild or not
    (an approximate HNSW list only as far as two builds' graphs agree: Qdrant draws their levels at
    random). Point ids are corpus order, so "lowest id" is "first in the corpus"."""
    out: dict[int, list[Scored]] = {}
    want = {i: limit + TIE_MARGIN for i, limit in enumerate(limits) if limit > 0}
    out.update({i: [] for i, limit in enumerate(limits) if limit <= 0})
    while want:
        asked = list(want.items())
        for (i, n), hits in zip(asked, fetch(asked), strict=True):
            ranked, limit = _ranked(hits), limits[i]
            if len(ranked) < n or ranked[-1][1] < ranked[limit - 1][1]:
                out[i] = ranked[:limit]
                del want[i]
            else:
                want[i] = 2 * n
    return [out[i] for i in range(len(limits))]


def fuse(
    lists: Sequence[Sequence[Scored]], *, rrf_k: int, limit: int, fusion: Fusion = "rrf", dense_weight: float = 0.5,
    sentences: Sequence[Scored] | None = None, sentence_share: float = 0.5,
) -> list[Scored]:
    """Fuse a hybrid query's tie-complete lists (dense, then BM25 when the query has an indexed
    term; `sentences`, the best-sentence list, when the index keeps one) with
    `index.fusion.fuse_scored`: RRF (plain at dense_weight 0.5: sum of 1 / (rrf_k + rank), ranks
    from 1) or a convex combination of normalised scores. Equal fused scores (rank r in one list,
    rank r in the other) go to the lower point id."""
    fused = fuse_scored([*lists, []][:2] if len(lists) == 1 else lists, fusion=fusion, dense_weight=dense_weight, rrf_k=rrf_k,
                        sentences=sentences, sentence_share=sentence_share)
    return sorted(fused, key=lambda kv: (-kv[1], kv[0]))[:limit]


def lists_of(q: EngineQuery) -> list[ListKind]:
    """The ranked lists a query needs. A query with no indexed term has no BM25 list (hybrid then
    ranks the dense one alone, with the sentence list if the index keeps one)."""
    has_terms = bool(q.sparse and q.sparse[0])
    if q.mode in ("dense", "sentences"):
        return [q.mode]
    if q.mode == "bm25":
        return ["bm25"] if has_terms else []
    kinds: list[ListKind] = ["dense"]
    if q.sentences:
        kinds.append("sentences")
    if has_terms:
        kinds.append("bm25")
    return kinds


def run_query(
    q: EngineQuery,
    search: Callable[[ListKind, int], Any],
    batch: Callable[[list[Any]], list[list[Scored]]],
    payloads: Callable[[list[int]], dict[int, dict[str, Any]]],
) -> list[EngineHit]:
    """One search on any engine: `search(kind, n)` makes the request for a list's first n ids
    and scores, `batch` runs requests, `payloads` reads points by id.

    Hybrid fuses here, not in the engine: the engine's fusion ranks each list as the engine
    ordered it, ties included, so a rebuild moved fused scores and even the fused set (a tie at a
    list's `depth` cut decides who enters). Each list is made tie-complete, fused with ties
    broken by point id, and only the kept points' payloads are read."""
    kinds = lists_of(q)
    if not kinds:
        return []
    fused = q.mode == "hybrid"

    def fetch(asked: Sequence[tuple[int, int]]) -> list[list[Scored]]:
        return batch([search(kinds[i], n) for i, n in asked])

    lists = tie_complete(fetch, [q.depth if fused else q.limit] * len(kinds))
    if fused:
        by_kind = dict(zip(kinds, lists, strict=True))
        top = fuse([by_kind[k] for k in kinds if k != "sentences"], rrf_k=q.rrf_k, limit=q.limit, fusion=q.fusion,
                   dense_weight=q.dense_weight, sentences=by_kind.get("sentences"), sentence_share=q.sentence_share)
    else:
        top = lists[0]
    # Payloads of the kept points only (fetched with the lists, the margin's would be read too).
    found = payloads([pid for pid, _ in top]) if q.with_payload and top else {}
    return [EngineHit(pid, score, found.get(pid, {})) for pid, score in top]


def _floats(vector: Sequence[float]) -> list[float]:
    """A vector as Python floats (a numpy row converts in one call, not one per element)."""
    tolist = getattr(vector, "tolist", None)
    return list(tolist()) if tolist is not None else list(map(float, vector))


class EdgeEngine:
    """Qdrant's embedded engine on a folder: a named dense vector and a BM25 sparse vector, and
    with `sentences` a multivector per chunk (its sentences' vectors, scored by the best one)."""

    def __init__(self, path: Path, shard: qe.EdgeShard, *, seal_every: int = 0, scratch: Path | None = None) -> None:
        self.path, self._shard = path, shard
        self._seal_every, self._unsealed = seal_every, 0
        self.scratch = scratch  # the private copy a read-only shard was opened from, removed on close

    @classmethod
    def create(
        cls, path: Path, *, dim: int, hnsw_m: int, hnsw_ef_construct: int, payload_graphs: bool = True,
        n_points: int = 0, segment_points: int = 0, sentences: bool = False,
    ) -> EdgeEngine:
        """`payload_graphs`: build Qdrant's extra graph links per indexed payload value, which
        filtered searches walk; without them the graph builds several times faster and a filtered
        search needs ACORN or an exact scan (bench/results/scale.json).

        `segment_points`: when the `n_points` to come are more, the shard is built a segment of
        that many points at a time (see `upsert`), so the build holds one segment's graph build
        in memory, not the whole corpus'; a search then visits each segment. 0: one segment."""
        import qdrant_edge as qe

        segments = -(-n_points // segment_points) if segment_points and n_points > segment_points else 1
        optimizers = None
        if segments > 1:
            # Qdrant measures a segment in KB of vectors. With room for one segment and no more,
            # its optimiser never merges two sealed segments back into the whole corpus; a full
            # segment is always past the size at which it gets its graph (10 MB by default).
            kb = segment_points * dim * 4 * 11 // (10 * 1024) + 1
            optimizers = qe.EdgeOptimizersConfig(default_segment_number=segments, max_segment_size=kb,
                                                 indexing_threshold=min(kb * 10 // 11, 10_000))

        def hnsw() -> qe.HnswIndexConfig:
            return qe.HnswIndexConfig(m=hnsw_m, ef_construct=hnsw_ef_construct, full_scan_threshold=10_000, payload_m=None if payload_graphs else 0)

        vectors = {DENSE: qe.EdgeVectorParams(size=dim, distance=qe.Distance.Cosine, hnsw_config=hnsw())}
        if sentences:
            # MaxSim over cosines: a chunk scores its best sentence's similarity to the query.
            vectors[SENTENCES] = qe.EdgeVectorParams(size=dim, distance=qe.Distance.Cosine, hnsw_config=hnsw(),
                                                     multivector_config=qe.MultiVectorConfig(qe.MultiVectorComparator.MaxSim))
        config = qe.EdgeConfig(
            vectors=vectors,
            sparse_vectors={SPARSE: qe.EdgeSparseVectorParams(modifier=qe.Modifier.Idf)},
            optimizers=optimizers,
            # The index is written once, then read: no WAL needed; finish() flushes.
            wal_enabled=False,
            # Qdrant's search pool runs a query's segments in parallel. One segment leaves it nothing
            # to split, and a pool of one thread per core only adds hand-offs: SciFact's hybrid lists
            # (2 cores, load 22, queries alternated) p50 0.42 ms and p90 3.30 with the default pool,
            # 0.36 and 0.43 with one thread. A segmented build keeps the pool.
            max_search_threads=None if segments > 1 else 1,
        )
        return cls(path, qe.EdgeShard.create(str(path), config), seal_every=segment_points if segments > 1 else 0)

    @classmethod
    def open(cls, path: Path) -> EdgeEngine:
        """Load the shard in place, or from a private copy when its folder cannot be written:
        Qdrant Edge rewrites its config, flag and tracker files when it opens and closes a shard
        (never on a search), so a shard on a read-only mount (a container image, a read-only
        volume) would not load. The copy lives in the temporary folder until `close`."""
        import qdrant_edge as qe

        if os.access(path, os.W_OK):
            return cls(path, qe.EdgeShard.load(str(path)))
        scratch = Path(tempfile.mkdtemp(prefix="querywise-shard-"))
        try:
            copy = Path(shutil.copytree(path, scratch / "shard"))
            return cls(copy, qe.EdgeShard.load(str(copy)), scratch=scratch)
        except BaseException:
            shutil.rmtree(scratch, ignore_errors=True)
            raise

    def upsert(self, points: Sequence[EnginePoint]) -> None:
        """One update per point, in order: a batch of points is stored in an order that varies
        from run to run, and with it the order of BM25 sums (scores moved by an ulp between two
        builds of one corpus). Point by point, the same points make the same shard, byte for
        byte, at the same speed (5,183 SciFact points: 0.21 s either way)."""
        import qdrant_edge as qe

        for p in points:
            vector: dict[str, Any] = {DENSE: _floats(p.dense), SPARSE: qe.SparseVector(*p.sparse)}
            if p.sentences is not None and len(p.sentences):
                vector[SENTENCES] = [_floats(v) for v in p.sentences]
            point = qe.Point(p.id, vector, p.payload)
            self._shard.update(qe.UpdateOperation.upsert_points([point]))
            self._unsealed += 1
            if self._unsealed == self._seal_every:
                self._seal()

    def _seal(self) -> None:
        """Build the graph of the points written since the last seal, then reopen the shard: the
        memory that build took goes back (measured at 400k chunks: bench/results/scale.json)."""
        import qdrant_edge as qe

        self._shard.optimize()
        self._shard.flush()
        self._shard.close()
        self._shard = qe.EdgeShard.load(str(self.path))
        self._unsealed = 0

    def delete(self, ids: Sequence[int]) -> None:
        """Remove points (a live update: the points of chunks no longer in the corpus)."""
        import qdrant_edge as qe

        if ids:
            self._shard.update(qe.UpdateOperation.delete_points(list(ids)))

    def set_sparse(self, vectors: Sequence[tuple[int, SparseVec]]) -> None:
        """Replace points' BM25 vectors, the rest of each point kept (a live update weighing again)."""
        import qdrant_edge as qe

        for start in range(0, len(vectors), 1024):
            batch = [qe.PointVectors(pid, {SPARSE: qe.SparseVector(*vec)}) for pid, vec in vectors[start : start + 1024]]
            self._shard.update(qe.UpdateOperation.update_vectors(batch))

    def flush(self) -> None:
        """Make what was written durable without building graphs: a live update's points go to a
        segment Qdrant searches as it is, the sealed segments' graphs are kept."""
        self._shard.flush()

    def create_payload_index(self, field: str, kind: PayloadKind, *, graph: bool) -> None:
        import qdrant_edge as qe

        params = {"keyword": qe.KeywordIndexParams, "float": qe.FloatIndexParams, "bool": qe.BoolIndexParams}[kind]
        self._shard.update(qe.UpdateOperation.create_field_index(field, params(enable_hnsw=graph)))

    def finish(self) -> None:
        self._shard.optimize()
        self._shard.flush()

    def query(self, q: EngineQuery) -> list[EngineHit]:
        import qdrant_edge as qe

        acorn = qe.AcornSearchParams(enable=True) if q.acorn and q.where else None
        params = qe.SearchParams(hnsw_ef=q.hnsw_ef, exact=q.exact, acorn=acorn)
        flt = _edge_filter(q.where)
        dense = list(map(float, q.dense or ())) if q.mode != "bm25" else []  # once, not once a list asked

        def search(kind: ListKind, n: int) -> qe.QueryRequest:
            if kind == "dense":
                # The graph is searched with ef = max(hnsw_ef, n): the margin past the cut leaves it as it was.
                query: Any = qe.Query.Nearest(dense, using=DENSE)
                return qe.QueryRequest(limit=n, query=query, filter=flt, params=params, with_payload=False)
            if kind == "sentences":  # the query as a one-vector multivector: MaxSim is its best sentence's cosine
                query = qe.Query.Nearest([dense], using=SENTENCES)
                return qe.QueryRequest(limit=n, query=query, filter=flt, params=params, with_payload=False)
            query = qe.Query.Nearest(qe.SparseVector(*(q.sparse or ([], []))), using=SPARSE)
            return qe.QueryRequest(limit=n, query=query, filter=flt, with_payload=False)

        def batch(requests: list[qe.QueryRequest]) -> list[list[Scored]]:
            answers = (
                [self._shard.query(requests[0])] if len(requests) == 1
                else self._shard.query_batch(qe.QueryBatchRequest(requests))
            )
            # A point id may be typed a UUID or a string; a build's are ints, scores floats already.
            return [[(int(p.id), p.score) for p in points] for points in answers]

        def payloads(ids: list[int]) -> dict[int, dict[str, Any]]:
            # A record's payload is made into a new dict each time it is read: no copy needed.
            return {int(r.id): r.payload or {} for r in self._shard.retrieve(list(ids), True, False)}

        return run_query(q, search, batch, payloads)

    def count(self) -> int:
        return int(self._shard.info().points_count)

    def close(self) -> None:
        try:
            self._shard.close()
        finally:
            if self.scratch is not None:
                shutil.rmtree(self.scratch, ignore_errors=True)
