"""The gold of a case is the set of its judged relevant documents, not one "primary" passage.

A failures row names its primary gold (`gold_chunk`, `gold_text`, `gold_doc`: located by
`locate`) and, when `eval --failures` wrote it, every relevant id (`gold_ids`: chunk ids or
document ids). Each member is looked up in the index (a chunk id, else every chunk of a
document id, else nothing: not in the index); the case's rank is its best-ranked member's, for the
original question and in the system's own `retrieved` list. The representative gold, which the
probes and the vector check read, is the member ranked best for the question (else in
`retrieved`), else the primary gold when the index holds it, else the first member it holds.
"""

from __future__ import annotations

from collections.abc import Sequence

from querywise.failures import FailureRow
from querywise.index.store import Hit
from querywise.triage.buckets import GoldRank
from querywise.triage.locate import ChunkTable, Location, prefer_ranked

__all__ = ["best_rank", "gold_set", "representative", "with_ranks"]


def _primary_key(f: FailureRow, primary: Location) -> str:
    return f.gold_chunk or f.gold_doc or primary.chunk_id or "gold text"


def gold_set(f: FailureRow, primary: Location, table: ChunkTable) -> list[GoldRank]:
    """Every judged relevant id of `f` with its chunks in the index, the primary gold first (its
    chunks are where `locate` found it); an id the index does not hold has no chunk ids."""
    first = GoldRank(id=_primary_key(f, primary), chunk_ids=[] if primary.absent else list(primary.chunk_ids))
    out = [first]
    seen = {first.id, *first.chunk_ids}
    for gid in f.gold_ids:
        if gid in seen:
            continue
        seen.add(gid)
        if gid in table.chunks:
            out.append(GoldRank(id=gid, chunk_ids=[gid]))
        else:
            out.append(GoldRank(id=gid, chunk_ids=list(table.by_doc.get(gid, []))))
    return out


def with_ranks(golds: Sequence[GoldRank], hits: Sequence[Hit], retrieved: Sequence[str] | None) -> list[GoldRank]:
    """Each member's best rank among `hits` (the index for the question) and its first position in
    `retrieved` (the system's list: chunk or document ids)."""
    rank_of: dict[str, int] = {}
    for h in hits:
        rank_of.setdefault(h.id, h.rank)
    position: dict[str, int] = {}
    for i, rid in enumerate(retrieved or (), start=1):
        position.setdefault(rid, i)
    out = []
    for g in golds:
        ranks = [rank_of[c] for c in g.chunk_ids if c in rank_of]
        places = [position[c] for c in {g.id, *g.chunk_ids} if c in position]
        out.append(g.model_copy(update={"rank_original": min(ranks, default=None), "retrieved_rank": min(places, default=None)}))
    return out


def best_rank(golds: Sequence[GoldRank], *, retrieved: bool = False) -> int | None:
    """The case's rank: its best-ranked member's (None: no member ranked)."""
    ranks = [g.retrieved_rank if retrieved else g.rank_original for g in golds]
    return min((r for r in ranks if r is not None), default=None)


def representative(primary: Location, golds: Sequence[GoldRank], table: ChunkTable, question_ranked: Sequence[str]) -> Location:
    """The gold the probes read: the member ranked best for the question, else in `retrieved`, else
    the primary (when the index holds it), else the first member the index holds; `primary` as
    is when the index holds none."""
    located = [g for g in golds if g.chunk_ids]
    if not located:
        return primary
    ranked = [g for g in located if g.rank_original is not None] or [g for g in located if g.retrieved_rank is not None]
    best = min(ranked, key=lambda g: (g.rank_original or 10**9, g.retrieved_rank or 10**9)) if ranked else (golds[0] if golds[0].chunk_ids else located[0])
    if best is golds[0] and not primary.absent:
        return prefer_ranked(primary, question_ranked)
    doc = table.chunks[best.chunk_ids[0]].doc_id
    if best.chunk_ids == [best.id]:
        loc = Location(method="chunk_id", chunk_id=best.id, chunk_ids=[best.id], doc_id=doc, detail=f"relevant chunk {best.id} (of {len(golds)} relevant ids)")
    else:
        loc = Location(
            method="document",
            chunk_id=best.chunk_ids[0],
            chunk_ids=list(best.chunk_ids),
            doc_id=doc,
            detail=f"relevant document {best.id} (of {len(golds)} relevant ids)",
        )
    return prefer_ranked(loc, question_ranked) if loc.method == "document" else loc
