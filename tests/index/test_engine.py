"""The embedded engine built a segment at a time: what a search finds does not depend on it."""

from __future__ import annotations

import json
from pathlib import Path

from querywise.conditions import parse_where
from querywise.config import IndexSettings, Settings
from querywise.corpus import Chunk
from querywise.index import Index, build_index

WORDS = ["warranty", "battery", "cushion", "shipping", "return", "refund", "hinge", "screen", "charger", "firmware", "case", "strap"]


def _corpus(n: int) -> list[Chunk]:
    return [
        Chunk(id=f"c{i}", text=f"{WORDS[i % 12]} {WORDS[(i * 7) % 12]} note {i} of the {WORDS[(i * 5) % 11]} manual",
              payload={"category": WORDS[i % 5], "year": 2000 + i % 20})
        for i in range(n)
    ]


def test_a_build_in_segments_ranks_as_one_segment_does(tmp_path: Path, hash_embedder) -> None:  # type: ignore[no-untyped-def]
    chunks = _corpus(1_300)
    whole = build_index(chunks, tmp_path / "whole", settings=Settings(index=IndexSettings(segment_chunks=0)), embedder=hash_embedder)
    parts = build_index(chunks, tmp_path / "parts", settings=Settings(index=IndexSettings(segment_chunks=500)), embedder=hash_embedder)
    # Two sealed segments of 500 points with their graphs; the last 300, too few to pay for a
    # graph, stay in the segment Qdrant writes into, scanned exactly.
    segments = [json.loads(p.read_text()) for p in (parts.build / "shard" / "segments").glob("*/segment.json")]
    sealed = [s for s in segments if s["config"]["vector_data"]["dense"]["index"]["type"] == "hnsw"]
    assert len(sealed) == 2 and len(segments) == 3
    assert [c.id for c in parts.chunks()] == [c.id for c in chunks]
    for query in ("battery charger", "firmware note 17", "refund of the hinge"):
        for where in (None, parse_where(["category=case", "year>2010"])):
            # BM25's IDF is the shard's, not a segment's: scores are the same to float precision.
            a = whole.search(query, mode="bm25", k=10, where=where)
            b = parts.search(query, mode="bm25", k=10, where=where)
            assert [h.id for h in a] == [h.id for h in b]
            assert [round(h.score, 4) for h in a] == [round(h.score, 4) for h in b]
            dense = parts.search(query, mode="dense", k=10, where=where)
            assert [h.id for h in dense] == [h.id for h in whole.search(query, mode="dense", k=10, where=where, exact=True)]
    whole.close()
    parts.close()


def test_a_one_segment_build_searches_with_one_pool_thread_and_a_segmented_one_with_the_default(tmp_path: Path, hash_embedder) -> None:  # type: ignore[no-untyped-def]
    """A single segment has nothing to search in parallel: its shard is written with one search
    thread (fewer hand-offs on a busy machine); a segmented build leaves Qdrant's default pool.
    Reopened, the shard keeps it and ranks as it did."""
    chunks = _corpus(1_300)
    whole = build_index(chunks, tmp_path / "whole", settings=Settings(index=IndexSettings(segment_chunks=0)), embedder=hash_embedder)
    parts = build_index(chunks, tmp_path / "parts", settings=Settings(index=IndexSettings(segment_chunks=500)), embedder=hash_embedder)
    threads = {name: json.loads((ix.build / "shard" / "edge_config.json").read_text()).get("max_search_threads")
               for name, ix in (("whole", whole), ("parts", parts))}
    assert threads == {"whole": 1, "parts": None}
    ranked = {q: [h.id for h in whole.search(q, mode="hybrid", k=10)] for q in ("battery charger", "refund of the hinge")}
    whole.close()
    parts.close()
    with Index.open(tmp_path / "whole", embedder=hash_embedder) as again:
        assert {q: [h.id for h in again.search(q, mode="hybrid", k=10)] for q in ranked} == ranked
        assert json.loads((again.build / "shard" / "edge_config.json").read_text())["max_search_threads"] == 1
